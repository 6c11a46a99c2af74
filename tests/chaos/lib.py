"""lib: what the chaos suites share — a private Postgres, cloudsim with a fleet carrying
planted secrets, fleetd replicas (start, kill -9, restart), HTTP with client timeouts that
records every answer, registration, a job load, and the checks (nothing lost, nothing
applied twice, reservations and quota add up, nothing stuck, no secret leaked)."""
import base64
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FINAL = ("succeeded", "failed", "cancelled")
ACTIVE = ("admitted", "dispatched", "running")
TRANSITIONAL = ("admitted", "dispatched", "preempted", "moving")
ENV = "test"
H100, L4, A100 = "nvidia-h100-80gb", "nvidia-l4", "nvidia-a100-80gb"
# qa + qb nominal H100 (56) is below the fleet's free H100s (60): the cohort limit binds
QUOTA = {"qa": {H100: 40, L4: 16}, "qb": {H100: 16, L4: 8}}
BORROW = {H100: 8, L4: 8}


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


class CheckFailed(Exception):
    pass


class Checks:
    """Named pass/fail results; every failure says what was expected and what was seen."""

    def __init__(self):
        self.results = []

    def ok(self, name, cond, detail=""):
        self.results.append((name, bool(cond), detail))
        log(("PASS " if cond else "FAIL ") + name + ("" if cond or not detail else ": " + detail))
        return bool(cond)

    def failed(self):
        return [r for r in self.results if not r[1]]


class Proc:
    def __init__(self, name, popen, logpath, url=None):
        self.name, self.popen, self.log, self.url = name, popen, logpath, url

    def alive(self):
        return self.popen is not None and self.popen.poll() is None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Sim:
    """The system under test: Postgres, cloudsim, fleetd replicas, all loopback."""

    def __init__(self, workdir, build, time_scale=20, tag="chaos"):
        self.dir = os.path.abspath(workdir)
        self.build = os.path.abspath(build)
        self.time_scale = time_scale
        self.tag = tag
        os.makedirs(self.dir, exist_ok=True)
        self.pgdir = os.path.join(self.dir, "pg")
        self.csdir = os.path.join(self.dir, "cloudsim")
        self.procs = {}
        self.capture = open(os.path.join(self.dir, "responses.jsonl"), "a")
        self.cap_lock = threading.Lock()
        self.secrets = {}
        self.admin = None
        self.master_key = base64.b64encode(os.urandom(32)).decode()
        self.secrets["master key"] = self.master_key
        self.registration = "api"
        self.cluster_ids = {}   # cloudsim name -> fleetd id
        self.pg_url = None
        self.sim_url = None
        self.fleetd_env = {}
        self.starts = {}
        self.crashed = []
        self.fresh_ids = False

    # ---- processes

    def _record_pid(self, pid):
        with open(os.path.join(self.dir, "pids"), "a") as f:
            f.write(f"{pid}\n")

    def start_pg(self):
        subprocess.run(["bash", os.path.join(TOP, "scripts/pg.sh"), "start", self.pgdir],
                       check=True, timeout=120)
        self.pg_url = subprocess.run(["bash", os.path.join(TOP, "scripts/pg.sh"), "url", self.pgdir],
                                     check=True, capture_output=True, text=True).stdout.strip()
        bindir = subprocess.run(["bash", os.path.join(TOP, "scripts/pg.sh"), "bindir", self.pgdir],
                                check=True, capture_output=True, text=True).stdout.strip()
        self.psql_bin = os.path.join(bindir, "psql")
        # pg.sh's generated password: psql (sql()) and fleetd (fleetd_environ()) inherit it
        os.environ["PGPASSFILE"] = os.path.join(self.pgdir, "pgpass")
        log("postgres", self.pg_url)

    def start_pg_ha(self):
        """A highly available Postgres instead (scripts/pg_ha.sh: Patroni + etcd, a primary
        and a synchronous standby); pg_url is the multi-host URL fleetd is given."""
        self.ha = True
        self.pg_ha("start")
        self.pg_url = self.pg_ha("url")
        bindir = subprocess.run(["bash", os.path.join(TOP, "scripts/pg.sh"), "bindir", self.pgdir],
                                check=True, capture_output=True, text=True).stdout.strip()
        self.psql_bin = os.path.join(bindir, "psql")
        log("postgres (HA)", self.pg_url, "primary", self.pg_ha("primary"))

    def pg_ha(self, action, *args):
        """pg_ha.sh ACTION; its output."""
        r = subprocess.run(["bash", os.path.join(TOP, "scripts/pg_ha.sh"), action, self.pgdir]
                           + list(args), timeout=180, capture_output=True, text=True)
        if r.returncode != 0:
            raise CheckFailed(f"pg_ha.sh {action}: {r.returncode} {r.stderr.strip()[-500:]}")
        return r.stdout.strip()

    def pg(self, action):
        """start | stop | restart of the private Postgres (pg.sh, or pg_ha.sh's stop)."""
        if getattr(self, "ha", False):
            if action != "stop":
                raise CheckFailed(f"pg {action}: not for the HA Postgres")
            self.pg_ha("destroy")
            return
        subprocess.run(["bash", os.path.join(TOP, "scripts/pg.sh"), action, self.pgdir],
                       check=True, timeout=120, capture_output=True)

    def sql(self, q, timeout=60):
        """Rows of q as lists of strings (psql -qAt); raises on any error."""
        r = subprocess.run([self.psql_bin, "-X", "-qAt", "-v", "ON_ERROR_STOP=1", "-F", "\t",
                            "-d", self.pg_url, "-c", q], capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise CheckFailed(f"sql failed: {q[:300]}: {r.stderr.strip()}")
        return [line.split("\t") for line in r.stdout.splitlines() if line != ""]

    def sql1(self, q):
        rows = self.sql(q)
        return rows[0][0] if rows else None

    def write_fleet(self):
        """cloudsim/fleets/test.json with recognisable secrets planted: cluster tokens,
        fleetd's AWS secret key and Azure client secret."""
        src = os.path.join(TOP, "cloudsim/fleets/test.json")
        fleet = json.load(open(src))
        rnd = os.urandom(6).hex()
        for c in fleet["clusters"]:
            tok = f"chaossecret-kube-{c['name']}-{rnd}"
            c["token"] = tok
            self.secrets[f"cluster token {c['name']}"] = tok
        aws = fleet["fleetd"]["aws"]
        aws["secret_key"] = f"chaossecret-awskey-{rnd}-0000000000"
        self.secrets["aws secret key"] = aws["secret_key"]
        az = fleet["fleetd"]["azure"]
        az["client_secret"] = f"chaossecret-azure-{rnd}"
        self.secrets["azure client secret"] = az["client_secret"]
        gcp = fleet["fleetd"]["gcp"]
        keyfile = os.path.normpath(os.path.join(os.path.dirname(src), gcp["private_key_file"]))
        gcp["private_key_file"] = keyfile
        for sa in fleet["gcp"].get("service_accounts", []):
            if "public_key_file" in sa:
                sa["public_key_file"] = os.path.normpath(os.path.join(os.path.dirname(src),
                                                                      sa["public_key_file"]))
        # a long run of the GCP private key's base64 body
        pem = open(keyfile).read().split("\n")
        body = [l for l in pem if l and not l.startswith("-----")]
        if body:
            self.secrets["gcp private key"] = max(body, key=len)[:40]
        if getattr(self, "edit_fleet", None) is not None:
            self.edit_fleet(fleet)   # a suite's own fleet (regionloss)
        path = os.path.join(self.dir, "fleet.json")
        json.dump(fleet, open(path, "w"), indent=1)
        return path

    def start_cloudsim(self):
        os.makedirs(self.csdir, exist_ok=True)
        for f in ("port", "fleetd.env"):
            if os.path.exists(os.path.join(self.csdir, f)):
                os.unlink(os.path.join(self.csdir, f))
        fleet = self.write_fleet()
        lp = os.path.join(self.dir, "cloudsim.log")
        p = subprocess.Popen([os.path.join(self.build, "cloudsim"), "--fleet", fleet, "--listen",
                              "127.0.0.1:0", "--state-dir", self.csdir, "--time-scale",
                              str(self.time_scale)], stdout=open(lp, "a"), stderr=subprocess.STDOUT,
                             start_new_session=True)
        self._record_pid(p.pid)
        self.procs["cloudsim"] = Proc("cloudsim", p, lp)
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(self.csdir, "port")):
            if time.time() > deadline or p.poll() is not None:
                raise CheckFailed(f"cloudsim did not start; see {lp}")
            time.sleep(0.05)
        time.sleep(0.1)
        for line in open(os.path.join(self.csdir, "fleetd.env")):
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                self.fleetd_env[k] = v
        self.sim_url = self.fleetd_env["FLEETD_CLOUDSIM_URL"]
        self.clusters = json.load(open(os.path.join(self.csdir, "clusters.json")))["clusters"]
        for c in self.clusters:
            for role, ident in (c.get("iam") or {}).items():
                if isinstance(ident, dict) and ident.get("client_secret"):
                    self.secrets[f"{c['name']} {role} client secret"] = ident["client_secret"]
        self.ca = open(os.path.join(self.csdir, "ca.pem")).read()
        log("cloudsim", self.sim_url, "time scale", self.time_scale)

    def fleetd_environ(self, extra=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("FLEETD_")}
        env.update(self.fleetd_env)
        env.update({"DATABASE_URL": self.pg_url, "FLEETD_MASTER_KEY": self.master_key,
                    "FLEETD_SCHEDULER_INTERVAL_MS": "250", "FLEETD_POLL_INTERVAL_MS": "1000",
                    "FLEETD_LOG_LEVEL": "info",
                    # the orphan sweep (issue 18) cleans up within the orphan check's grace
                    "FLEETD_SWEEP_INTERVAL_MS": "2000", "FLEETD_ORPHAN_MIN_AGE": "5"})
        env.update(extra or {})
        return env

    def migrate_and_tokens(self):
        env = self.fleetd_environ()
        subprocess.run([os.path.join(self.build, "fleetd"), "migrate"], env=env, check=True,
                       capture_output=True, timeout=120)
        self.admin = self.token("admin", "admin", "*")
        self.secrets["admin api token"] = self.admin

    def token(self, name, role, envs):
        r = subprocess.run([os.path.join(self.build, "fleetd"), "token", "create", "--name", name,
                            "--role", role, "--env", envs], env=self.fleetd_environ(),
                           capture_output=True, text=True, timeout=60)
        for line in r.stdout.splitlines():
            if line.startswith("fleet_"):
                return line.strip()
        raise CheckFailed(f"token create: {r.returncode} {r.stdout} {r.stderr}")

    def start_fleetd(self, name, workers="scheduler,dispatch,status,poller", port=None, wait=True):
        """Starts (or restarts, on the same port) fleetd replica name."""
        old = self.procs.get(name)
        if port is None:
            port = int(old.url.rsplit(":", 1)[1]) if old else free_port()
        lp = os.path.join(self.dir, f"fleetd-{name}.log")
        # A restarted replica keeps its name, as a container restarted in its pod does
        # (same hostname, same pid 1); --fresh-instance-id gives each start a new one.
        self.starts[name] = self.starts.get(name, 0) + 1
        iid = f"{self.tag}-{name}" + (f"-{self.starts[name]}" if self.fresh_ids else "")
        env = self.fleetd_environ({"FLEETD_LISTEN": f"127.0.0.1:{port}", "FLEETD_WORKERS": workers,
                                   "FLEETD_INSTANCE_ID": iid})
        p = subprocess.Popen([os.path.join(self.build, "fleetd"), "serve", "--migrate"], env=env,
                             stdout=open(lp, "a"), stderr=subprocess.STDOUT, start_new_session=True)
        self._record_pid(p.pid)
        pr = Proc(name, p, lp, f"http://127.0.0.1:{port}")
        pr.workers = workers
        self.procs[name] = pr
        if wait:
            self.wait_healthy(pr)
        return pr

    def wait_healthy(self, pr, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not pr.alive():
                raise CheckFailed(f"fleetd {pr.name} exited {pr.popen.returncode}; see {pr.log}")
            st, _, _ = self.http("GET", pr.url + "/healthz", auth=False, timeout=2, record=False)
            if st == 200:
                return time.time()
            time.sleep(0.05)
        raise CheckFailed(f"fleetd {pr.name} not healthy after {timeout}s; see {pr.log}")

    def kill9(self, name):
        pr = self.procs[name]
        if pr.alive():
            pr.popen.send_signal(signal.SIGKILL)
            pr.popen.wait(timeout=30)
        else:   # it died before we came to kill it: a crash of its own
            self.crashed.append((name, pr.popen.returncode, pr.log))

    def stop_all(self):
        for name, pr in list(self.procs.items()):
            if pr.alive():
                pr.popen.send_signal(signal.SIGTERM)
        for name, pr in list(self.procs.items()):
            if pr.popen is None:
                continue
            try:
                pr.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pr.popen.kill()
                pr.popen.wait(timeout=10)
        try:
            self.pg("stop")
        except Exception as ex:  # noqa: BLE001 - teardown goes on
            log("pg stop:", ex)
        self.capture.close()

    # ---- HTTP

    def http(self, method, url, body=None, auth=True, timeout=15, headers=None, record=True,
             token=None):
        """(status, headers dict, text); status 0 for a connection failure, -1 for a client
        timeout (the server hung)."""
        data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if auth:
            req.add_header("Authorization", "Bearer " + (token or self.admin))
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        status, hdrs, text = 0, {}, ""
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, hdrs, text = r.status, dict(r.headers), r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            status, hdrs = e.code, dict(e.headers)
            try:
                text = e.read().decode(errors="replace")
            except Exception:  # noqa: BLE001 - a reset mid-body
                text = ""
        except (socket.timeout, TimeoutError):
            status, text = -1, "client timeout"
        except urllib.error.URLError as e:
            status, text = (-1, "client timeout") if isinstance(e.reason, socket.timeout) \
                else (0, str(e.reason))
        except (ConnectionError, OSError) as e:
            status, text = 0, str(e)
        if record and status > 0:
            with self.cap_lock:
                self.capture.write(json.dumps({"method": method, "url": url, "status": status,
                                               "headers": hdrs, "body": text}) + "\n")
        return status, hdrs, text

    def api(self, method, path, body=None, ok=(200, 201), replica=None, **kw):
        url = (replica or self.any_replica()).url + path
        st, h, text = self.http(method, url, body, **kw)
        if st not in ok:
            raise CheckFailed(f"{method} {path}: {st} {text[:500]}")
        return json.loads(text) if text else None

    def any_replica(self):
        alive = [p for n, p in self.procs.items() if n != "cloudsim" and p.alive()]
        if not alive:
            raise CheckFailed("no fleetd replica alive")
        return random.choice(alive)

    def sim(self, method, path, body=None, timeout=15):
        st, _, text = self.http(method, self.sim_url + path, body, auth=False, timeout=timeout,
                                record=False)
        if st not in (200, 201, 204):
            raise CheckFailed(f"cloudsim {method} {path}: {st} {text[:300]}")
        return json.loads(text) if text else None

    def metric(self, pr, name):
        st, _, text = self.http("GET", pr.url + "/metrics", timeout=5, record=True)  # admin of *
        if st != 200:
            return None
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    # ---- registration

    def register(self):
        """Environment, clouds (phase 1, /_sim/iam as Terraform would, phase 2), clusters,
        priority classes, two queues in one cohort.  Falls back to SQL for a cloud whose phase
        2 fails (noted in self.registration)."""
        import register  # noqa: PLC0415 - sibling module
        register.register(self)

    # ---- load

    def job_body(self, i, rng):
        r = rng.random()
        if r < 0.06:
            kind = "RayCluster"
        else:
            kind = "RayJob"
        flavor = rng.choice([H100] * 2 + [L4])
        count = rng.choice([1, 2, 4, 8] if flavor != L4 else [1, 2, 4])
        b = {"environment": ENV, "kind": kind, "queue": rng.choice(["qa", "qb"]),
             "name": f"{self.tag[:2]}{i}", "ray_version": "2.52.0",
             "head": {"cpu": "1", "memory": "2Gi"},
             "worker_groups": [{"name": "gpu", "replicas": 1, "cpu": "4", "memory": "16Gi",
                                "accelerator": {"flavor": flavor, "count": count}}]}
        if kind == "RayJob":
            b["entrypoint"] = "python train.py"
            b["ttl_seconds_after_finished"] = 3
        return b


class Load:
    """Submits n jobs from `threads` clients with Idempotency-Key, retrying connection
    failures and 503s against any live replica until acked or `give_up` seconds pass."""

    def __init__(self, sim, n, threads=8, seed=1, give_up=120, cancel_frac=0.08, start=0):
        self.sim, self.n, self.threads, self.give_up = sim, n, threads, give_up
        self.rng = random.Random(seed)
        self.bodies = [sim.job_body(start + i, self.rng) for i in range(n)]
        self.cancel = set(self.rng.sample(range(n), int(n * cancel_frac)))
        self.acked = {}        # name -> id (POST answered 201)
        self.unacked = []      # (name, last status, text)
        self.statuses = {}
        self.hangs = []
        self.bad = []          # answers that are neither 201 nor 503 with Retry-After
        self.next = 0
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.cancelled = 0
        self.cancel_failed = []
        self.timers = []

    def _one(self, i):
        body = self.bodies[i]
        key = f"{self.sim.tag}-{body['name']}"
        deadline = time.time() + self.give_up
        last = (0, "")
        while time.time() < deadline:
            try:
                pr = self.sim.any_replica()
            except CheckFailed:
                time.sleep(0.1)
                continue
            t0 = time.time()
            st, h, text = self.sim.http("POST", pr.url + "/v1/jobs", body, timeout=20,
                                        headers={"Idempotency-Key": key})
            with self.lock:
                self.statuses[st] = self.statuses.get(st, 0) + 1
                if st == -1:
                    self.hangs.append((body["name"], pr.name, round(time.time() - t0, 1)))
            last = (st, text[:300])
            if st == 201:
                jid = json.loads(text)["id"]
                with self.lock:
                    self.acked[body["name"]] = jid
                if i in self.cancel or body["kind"] == "RayCluster":
                    # RayClusters never end on their own: each lives a few seconds, then is
                    # cancelled (deleted from its cluster), so capacity and quota come back
                    delay = self.rng.uniform(3, 10) if body["kind"] == "RayCluster" \
                        else self.rng.random() * 0.5
                    t = threading.Timer(delay, self._cancel, args=(jid,))
                    t.daemon = True
                    with self.lock:
                        self.timers.append(t)
                    t.start()
                return
            if st > 0 and not (st == 503 and "Retry-After" in h):
                with self.lock:
                    self.bad.append((body["name"], pr.name, st, text[:200]))
            if st in (0, -1, 409, 500, 502, 503) or st >= 500:
                time.sleep(0.1 + self.rng.random() * 0.3)
                continue
            break  # a 4xx is a real refusal: report it
        with self.lock:
            self.unacked.append((body["name"],) + last)

    def _cancel(self, jid):
        for _ in range(80):
            try:
                url = self.sim.any_replica().url + f"/v1/jobs/{jid}/cancel"
            except CheckFailed:
                time.sleep(0.25)
                continue
            st, _, _ = self.sim.http("POST", url, {}, timeout=20)
            if st in (200, 202):
                with self.lock:
                    self.cancelled += 1
                return
            time.sleep(0.25)
        with self.lock:
            self.cancel_failed.append(jid)

    def _worker(self):
        while True:
            with self.lock:
                if self.next >= self.n:
                    return
                i = self.next
                self.next += 1
            if self.rate:
                time.sleep(max(0.0, self.t0 + i / self.rate - time.time()))
            self._one(i)

    def start(self, rate=None):
        """rate: jobs per second (None: as fast as the clients go)."""
        self.rate = rate
        self.t0 = time.time()
        self.ts = [threading.Thread(target=self._worker, daemon=True) for _ in range(self.threads)]
        for t in self.ts:
            t.start()
        return self

    def wait(self, timeout):
        """Until every submission and every cancel is done."""
        end = time.time() + timeout
        for t in self.ts:
            t.join(max(0, end - time.time()))
        with self.lock:
            timers = list(self.timers)
        for t in timers:
            t.join(max(0, end - time.time()))
        return not any(t.is_alive() for t in self.ts + timers)


def wait_settled(sim, bound, allow_pending=False, stall=75):
    """Waits until every job is final or steady (RayCluster running, or pending when
    allow_pending); gives up after bound seconds, or earlier when no job event at all was
    written for stall seconds (stuck, not slow).  Returns (seconds, rows still moving,
    stalled)."""
    t0 = time.time()
    steady = "('running')" if not allow_pending else "('running','pending')"
    q = ("SELECT id, name, kind, state, attempt, coalesce(reason,'') FROM jobs WHERE state NOT IN"
         " ('succeeded','failed','cancelled') AND NOT (kind IN ('RayCluster','RayService') AND"
         f" state IN {steady})")
    rows, last, moved = [], None, time.time()
    while time.time() - t0 < bound:
        rows = sim.sql(q)
        if not rows:
            return time.time() - t0, [], False
        ev = sim.sql1("SELECT max(id) FROM job_events")
        if ev != last:
            last, moved = ev, time.time()
        elif time.time() - moved > stall:
            return time.time() - t0, rows, True
        time.sleep(1)
    return time.time() - t0, rows, False


def events_text(sim, jid):
    rows = sim.sql(f"SELECT at::time, type, coalesce(from_state,''), coalesce(to_state,''), attempt,"
                   f" left(message, 160) FROM job_events WHERE job_id = '{jid}' ORDER BY id")
    return "\n".join("    " + " ".join(r) for r in rows)
