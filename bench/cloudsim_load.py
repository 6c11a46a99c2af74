"""bench/cloudsim_load.py — the load of bench/cloudsim.sh on a running cloudsim.

Arguments: PID STATE_DIR PER_CLUSTER WINDOW_S LIST_RATE RAYJOB_FIXTURE.  Phases, each
followed by a measuring window over cloudsim's /proc figures: idle; PER_CLUSTER RayJobs
created on every cluster (the fixture renamed, one 8-GPU worker, fleetd's labels) and their
pods started; a list then a watch per cluster and kind as fleetd's status worker keeps them
(six per cluster), with LIST_RATE lists of RayJobs per second over random clusters meanwhile
(their latency reported).  One line per phase: VmRSS/VmHWM MiB, CPU % of one core, and the
same per cluster.
"""
import asyncio, copy, json, os, random, ssl, sys, time

pid, state, per, window, rate, fixture = sys.argv[1:7]
per, window, rate = int(per), float(window), float(rate)
clusters = json.load(open(os.path.join(state, "clusters.json")))["clusters"]
n = len(clusters)
ctx = ssl.create_default_context(cafile=clusters[0]["ca_file"])
SEL = "labelSelector=app.kubernetes.io%2Fmanaged-by%3Dfleetd"
KINDS = [("/apis/ray.io/v1/rayjobs", SEL), ("/apis/ray.io/v1/rayclusters", SEL),
         ("/apis/ray.io/v1/rayservices", SEL), ("/apis/ray.io/v1/raycronjobs", SEL),
         ("/api/v1/pods", SEL), ("/api/v1/events", "fieldSelector=type%3DWarning")]
TCK = os.sysconf("SC_CLK_TCK")


def cpu_s():
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TCK


def mem():
    v = {}
    for line in open("/proc/%s/status" % pid):
        k, _, rest = line.partition(":")
        if k in ("VmRSS", "VmHWM", "Threads"):
            v[k] = int(rest.split()[0])
    return v


async def measure(label, seconds, extra=""):
    c0, t0 = cpu_s(), time.monotonic()
    await asyncio.sleep(seconds)
    c1, t1 = cpu_s(), time.monotonic()
    m = mem()
    pct = 100 * (c1 - c0) / (t1 - t0)
    print("CLOUDSIM %s clusters=%d rss_mib=%.1f hwm_mib=%.1f threads=%d cpu_pct=%.1f "
          "rss_kib_per_cluster=%.0f cpu_ms_per_cluster_s=%.3f load=%s %s" % (
              label, n, m["VmRSS"] / 1024, m["VmHWM"] / 1024, m["Threads"], pct,
              m["VmRSS"] / n, 10 * pct / n, open("/proc/loadavg").read().split()[0], extra),
          flush=True)


class Conn:
    """One keep-alive HTTP/1.1 connection to the Kubernetes port."""

    def __init__(self, url):
        rest = url.split("://", 1)[1]
        self.hostport, self.base = rest.split("/", 1)
        self.base = "/" + self.base
        self.r = self.w = None

    async def open(self):
        host, port = self.hostport.split(":")
        self.r, self.w = await asyncio.open_connection(host, int(port), ssl=ctx)

    async def send(self, method, path, token, body=None, ctype="application/json"):
        if self.w is None:
            await self.open()
        data = json.dumps(body).encode() if body is not None else b""
        head = "%s %s%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n" % (
            method, self.base, path, self.hostport, token)
        if body is not None:
            head += "Content-Type: %s\r\nContent-Length: %d\r\n" % (ctype, len(data))
        self.w.write(head.encode() + b"\r\n" + data)
        await self.w.drain()
        status = int((await self.r.readline()).split()[1])
        hdr = {}
        while True:
            line = (await self.r.readline()).decode().strip()
            if not line:
                break
            k, _, v = line.partition(":")
            hdr[k.lower()] = v.strip()
        return status, hdr

    async def body(self, hdr):
        if "content-length" in hdr:
            return await self.r.readexactly(int(hdr["content-length"]))
        out = b""
        while True:
            size = int((await self.r.readline()).strip() or b"0", 16)
            if size == 0:
                await self.r.readline()
                return out
            out += await self.r.readexactly(size)
            await self.r.readline()

    async def call(self, method, path, token, body=None, ctype="application/json"):
        status, hdr = await self.send(method, path, token, body, ctype)
        return status, await self.body(hdr)


def rayjob(tmpl, cl, i):
    j = copy.deepcopy(tmpl)
    name = "job-%s-%d" % (cl["name"], i)
    j["metadata"]["name"] = name
    j["metadata"]["namespace"] = "fleet-bench"
    spec = j["spec"]
    spec["suspend"] = False
    rcs = spec["rayClusterSpec"]
    head = rcs["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = {"requests": {"cpu": "1", "memory": "4Gi"},
                         "limits": {"cpu": "1", "memory": "4Gi"}}
    g = rcs["workerGroupSpecs"][0]	# one 8-GPU worker on a p5 node, as bench/status.sh's
    g["replicas"] = g["minReplicas"] = g["maxReplicas"] = 1
    g["template"]["spec"]["nodeSelector"] = {"sagemaker.amazonaws.com/instance-group-name": "p5"}
    rcs["workerGroupSpecs"] = [g]
    return j


async def create_all(tmpl):
    q = asyncio.Queue()
    for cl in clusters:
        q.put_nowait(cl)
    done = [0]

    async def worker():
        while not q.empty():
            cl = q.get_nowait()
            c = Conn(cl["api_server"])
            st, _ = await c.call("POST", "/api/v1/namespaces", cl["token"],
                                 {"metadata": {"name": "fleet-bench"}})
            assert st in (201, 409), st
            for i in range(per):
                st, b = await c.call("POST", "/apis/ray.io/v1/namespaces/fleet-bench/rayjobs",
                                     cl["token"], rayjob(tmpl, cl, i))
                assert st == 201, (st, b[:300])
                done[0] += 1
            c.w.close()

    await asyncio.gather(*[worker() for _ in range(8)])
    return done[0]


events = [0]
watches_open = [0]
watch_fail = [0]


async def follow(cl, path, query):
    c = Conn(cl["api_server"])
    try:
        st, b = await c.call("GET", "%s?%s&limit=500" % (path, query), cl["token"])
        rv = json.loads(b)["metadata"]["resourceVersion"]
        st, hdr = await c.send("GET", "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=300"
                               "&resourceVersion=%s&%s" % (path, rv, query), cl["token"])
        if st != 200:
            watch_fail[0] += 1
            return
        watches_open[0] += 1
        while True:
            size = int((await c.r.readline()).strip() or b"0", 16)
            if size == 0:
                break
            chunk = await c.r.readexactly(size)
            await c.r.readline()
            events[0] += chunk.count(b"\n")
    except (OSError, asyncio.IncompleteReadError, ValueError, json.JSONDecodeError):
        watch_fail[0] += 1


async def lists(seconds, lat):
    conns = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        cl = random.choice(clusters)
        c = conns.setdefault(cl["name"], Conn(cl["api_server"]))
        t0 = time.monotonic()
        st, _ = await c.call("GET", "/apis/ray.io/v1/rayjobs?%s&limit=500" % SEL, cl["token"])
        lat.append(time.monotonic() - t0)
        await asyncio.sleep(max(0, 4 / rate - (time.monotonic() - t0)))


async def main():
    tmpl = json.load(open(fixture))
    await asyncio.sleep(3)
    await measure("idle", window)
    t0 = time.monotonic()
    c0 = cpu_s()
    made = await create_all(tmpl)
    dt = time.monotonic() - t0
    print("CLOUDSIM created %d RayJobs in %.1f s (%.0f/s), cloudsim CPU %.1f ms per create" % (
        made, dt, made / dt, 1000 * (cpu_s() - c0) / max(made, 1)), flush=True)
    await asyncio.sleep(10)	# pods scheduled and started
    await measure("running", window)
    t0 = time.monotonic()
    tasks = [asyncio.ensure_future(follow(cl, p, q)) for cl in clusters for p, q in KINDS]
    while watches_open[0] + watch_fail[0] < len(tasks) and time.monotonic() - t0 < 300:
        await asyncio.sleep(0.5)
    print("CLOUDSIM %d/%d watches open (%d failed) after %.1f s" % (
        watches_open[0], len(tasks), watch_fail[0], time.monotonic() - t0), flush=True)
    await measure("watched", window)
    lat = []
    e0 = events[0]
    lt = [asyncio.ensure_future(lists(window + 1, lat)) for _ in range(4)]
    await measure("watched+lists", window)
    await asyncio.gather(*lt)
    lat.sort()
    if lat:
        print("CLOUDSIM lists %d, p50 %.1f ms, p99 %.1f ms; watch events meanwhile %d" % (
            len(lat), 1000 * lat[len(lat) // 2], 1000 * lat[int(len(lat) * 0.99)],
            events[0] - e0), flush=True)
    for t in tasks:
        t.cancel()


asyncio.run(main())
