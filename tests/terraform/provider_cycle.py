"""provider_cycle: terraform-provider-fleet driven by the real terraform binary against a live
fleetd and cloudsim (tests/chaos/lib.py starts Postgres, cloudsim and fleetd on loopback).
init from a local filesystem mirror -> validate -> plan -> apply (three clouds through both
registration phases, one per provider type, a member cluster, queue, priority class, token)
-> plan clean -> in-place update -> an environment's dashboard_ingress set, drifted, imported and
removed -> replacement -> drift made through the API planned ->
import then plan clean -> plan-time validation errors naming the attribute -> a phase 2
that fails with each failed check -> state scan -> destroy leaves nothing in fleetd.
Usage: provider_cycle.py BUILD_DIR"""
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "chaos"))
from lib import CheckFailed, Sim, log  # noqa: E402
from tf_configs import BAD_TF, CA_TF, ENV, FLAVOR_TF, H100, TF, fail_iam_tf, main_tf  # noqa: E402


class Flaky:
    """A loopback proxy to fleetd that answers the first request 503 and the retry of that same
    request 429, each with Retry-After: 1, and forwards everything else; records when each
    request of that path arrived."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.seen = []          # (time, method, path, status answered), of the victim path
        self.victim = f"/v1/environments/{ENV}"   # read by one resource only
        self.lock = threading.Lock()
        flaky = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                with flaky.lock:
                    mine = self.path == flaky.victim
                    reject = mine and len(flaky.seen) < 2
                    if reject:
                        st = 503 if not flaky.seen else 429
                        flaky.seen.append((time.time(), self.command, self.path, st))
                if reject:
                    self.send_response(st)
                    self.send_header("Retry-After", "1")
                    self.send_header("Content-Type", "application/problem+json")
                    data = json.dumps({"status": st, "code": "test.flaky", "title": "try later"}).encode()
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                req = urllib.request.Request(flaky.upstream + self.path, data=body, method=self.command)
                for k in ("Authorization", "Content-Type", "Accept", "Idempotency-Key", "If-Match"):
                    if self.headers.get(k):
                        req.add_header(k, self.headers[k])
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        st, hdrs, data = r.status, r.headers, r.read()
                except urllib.error.HTTPError as e:
                    st, hdrs, data = e.code, e.headers, e.read()
                if mine:
                    with flaky.lock:
                        flaky.seen.append((time.time(), self.command, self.path, st))
                self.send_response(st)
                for k in ("Content-Type", "ETag", "Location"):
                    if hdrs.get(k):
                        self.send_header(k, hdrs[k])
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()




def tls_fleetd(sim, work):
    """A second fleetd replica serving HTTPS with a certificate of a fresh CA."""
    d = os.path.join(work, "tls")
    os.makedirs(d, exist_ok=True)
    ca, leaf = os.path.join(d, "ca"), os.path.join(d, "leaf")
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, cwd=d)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "2", "-subj", "/CN=tf test CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", leaf + ".key", "-out", leaf + ".csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", leaf + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
        "-CAcreateserial", "-out", leaf + ".pem", "-days", "2", "-extfile", "ext.cnf")
    from lib import Proc, free_port  # noqa: PLC0415
    port = free_port()
    lp = os.path.join(sim.dir, "fleetd-tls.log")
    env = sim.fleetd_environ({"FLEETD_LISTEN": f"127.0.0.1:{port}", "FLEETD_WORKERS": "none",
                              "FLEETD_INSTANCE_ID": "tf-tls", "FLEETD_TLS_CERT": leaf + ".pem",
                              "FLEETD_TLS_KEY": leaf + ".key"})
    p = subprocess.Popen([os.path.join(sim.build, "fleetd"), "serve"], env=env,
                         stdout=open(lp, "a"), stderr=subprocess.STDOUT, start_new_session=True)
    sim._record_pid(p.pid)
    sim.procs["tls"] = Proc("tls", p, lp, f"https://127.0.0.1:{port}")
    deadline = time.time() + 60
    while time.time() < deadline:
        r = subprocess.run(["curl", "-fsS", "--cacert", ca + ".pem", f"https://127.0.0.1:{port}/healthz"],
                           capture_output=True)
        if r.returncode == 0:
            return f"https://127.0.0.1:{port}", ca + ".pem"
        if p.poll() is not None:
            break
        time.sleep(0.1)
    raise CheckFailed(f"fleetd with TLS did not start; see {lp}")


def expect(cond, what):
    if not cond:
        raise CheckFailed(what)
    log("ok:", what)


def run(build, work):
    t_start = time.time()
    sim = Sim(os.path.join(work, "sim"), build, time_scale=50, tag="tf")
    try:
        sim.start_pg()
        sim.start_cloudsim()
        sim.migrate_and_tokens()
        fleetd = sim.start_fleetd("r0", workers="none")
        mirror = os.path.join(work, "mirror")
        subprocess.run(["bash", os.path.join(TOP, "terraform/provider/install.sh"), build, mirror],
                       check=True, capture_output=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "FLEET_"))}
        env.update({"TF_CLI_CONFIG_FILE": os.path.join(mirror, "terraformrc"),
                    "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1",
                    "TF_LOG_PROVIDER": "DEBUG", "TF_LOG_PATH": os.path.join(work, "tf.log"),
                    "FLEET_URL": fleetd.url, "FLEET_TOKEN": sim.admin,
                    "ASAN_OPTIONS": env.get("ASAN_OPTIONS", "") or "detect_leaks=1",
                    "LSAN_OPTIONS": f"suppressions={TOP}/tests/lsan.supp"})
        gke = next(c for c in sim.clusters if c["provider"] == "gke")
        env["TF_VAR_gke_token"] = gke["token"]
        tf = TF(os.path.join(work, "main"), env)
        v = {}

        r = tf.run("version")
        expect("Terraform v1.11" in r.stdout, f"terraform version: {r.stdout.splitlines()[0]}")
        tf.write(main_tf(sim, v))
        tf.run("init", "-input=false")
        expect(os.path.exists(os.path.join(tf.dir, ".terraform.lock.hcl")),
               "init installed fleetd/fleet from the local mirror")
        tf.run("validate")
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect("fleet_cloud_iam.hp will be created" in r.stdout and
               "module.gke_a.fleet_cluster.this will be created" in r.stdout,
               "plan creates everything, modules included")
        expect(gke["token"] not in r.stdout, "the cluster token is not in the plan output")
        tf.run("apply", "-input=false", "-auto-approve", timeout=180)
        clouds = {c["name"]: c for c in sim.api("GET", "/v1/clouds?limit=100")["items"]}
        for n in ("tf-gke-usc1", "tf-aks-eus", "tf-hp-usw2"):
            expect(clouds.get(n, {}).get("state") == "active",
                   f"two-phase registration of {n} through apply: active")
        r = tf.run("output", "-json")
        outs = json.loads(r.stdout)
        expect(outs["hp_state"]["value"] == "active" and outs["gke_regions"]["value"] > 3 and
               outs["aks_roles"]["value"] >= 1 and "@" in outs["gke_sa"]["value"],
               "data sources and typed iam_required read back")
        hooks = sim.api("GET", f"/v1/webhooks?environment={ENV}")["items"]
        expect(len(hooks) == 1 and hooks[0]["types"] == ["job.state_changed", "job.failed"] and
               outs["webhook_secret"]["value"].startswith("whsec_"),
               "fleet_webhook created; its secret is a sensitive output")
        budgets = sim.api("GET", f"/v1/budgets?environment={ENV}")["items"]
        expect(len(budgets) == 1 and budgets[0]["queue"] == "tf-q" and
               budgets[0]["amount_usd"] == 5000 and budgets[0]["soft_percent"] == 90 and
               budgets[0]["hard"] is True and budgets[0]["spent_usd"] == 0,
               "fleet_budget created: a hard monthly budget of the queue")
        teams = sim.api("GET", "/v1/teams?limit=100")["items"]
        mlq = next(x for x in sim.api("GET", f"/v1/queues?environment={ENV}")["items"]
                   if x["name"] == "tf-ml-q")
        mltok = next(x for x in sim.api("GET", "/v1/tokens?limit=100")["items"]
                     if x["name"] == "tf-ml-submitter" and not x["revoked"])
        expect([t["environments"] for t in teams if t["name"] == "tf-ml"] == [[ENV]] and
               mlq["team"] == "tf-ml" and mltok["team"] == "tf-ml" and
               mltok["role"] == "submitter",
               "fleet_team, a team's queue and a submitter token of the team created")
        tf.plan_clean("after the first apply")

        # fleet_flavor: a job naming a flavor fleetd does not ship is refused, the admin adds
        # it through terraform, and the same job is accepted (no restart, no rebuild)
        job = {"environment": ENV, "kind": "RayJob", "queue": "tf-q", "name": "b300",
               "ray_version": "2.52.0", "entrypoint": "python t.py",
               "head": {"cpu": "1", "memory": "2Gi"},
               "worker_groups": [{"name": "gpu", "replicas": 1, "cpu": "8", "memory": "64Gi",
                                  "accelerator": {"flavor": "tf-b300", "count": 8}}]}
        st, _, text = sim.http("POST", fleetd.url + "/v1/jobs", job)
        expect(st == 400 and "catalog.unknown_flavor" in text,
               f"a job of flavor tf-b300 before fleet_flavor: 400 catalog.unknown_flavor ({st})")
        v["flavor"] = FLAVOR_TF
        tf.write(main_tf(sim, v))
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect("fleet_flavor.b300 will be created" in r.stdout, "plan creates fleet_flavor.b300")
        tf.run("apply", "-input=false", "-auto-approve")
        fl = sim.api("GET", "/v1/flavors/tf-b300")
        expect(fl["machine_types"][0]["machine_type"] == "ml.p6-b300.48xlarge" and
               fl["k8s_resource"] == "nvidia.com/gpu" and not fl["builtin"],
               "fleetd has the flavor terraform added")
        made = sim.api("POST", "/v1/jobs", job, ok=(201,))
        expect(made["state"] == "pending", "the same job is accepted once the flavor exists")
        sim.api("POST", f"/v1/jobs/{made['id']}/cancel", {}, ok=(200, 202))
        tf.plan_clean("after adding fleet_flavor")

        # in-place update
        expect(sim.api("GET", f"/v1/environments/{ENV}")["upgrade_deadline_seconds"] == 1800,
               "fleet_environment upgrade_deadline_seconds applied (1800)")
        pol = sim.api("GET", f"/v1/environments/{ENV}")["pod_policy"]
        expect(pol["containers"] is False and pol["env"] is True,
               "fleet_environment pod_policy applied (containers false, the rest defaulted)")
        hs = sim.api("GET", f"/v1/environments/{ENV}")["history_server"]
        expect(hs and hs["storage"] == f"gs://tf-ray-logs/{ENV}" and
               hs["collector_image"] == "quay.io/kuberay/collector:v1.7.0",
               "fleet_environment history_server applied")
        v.update(weight=2, env_desc="changed by terraform", label="ml2",
                 env_volume_kinds='["persistent_volume_claim"]')
        tf.write(main_tf(sim, v))
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect(re.search(r"fleet_queue\.q will be updated in-place", r.stdout) and
               re.search(r"~ weight\s+= 1 -> 2", r.stdout) and
               "0 to add, 3 to change, 0 to destroy" in r.stdout,
               "in-place update planned (queue weight 1 -> 2, environment, cluster labels)")
        tf.run("apply", "-input=false", "-auto-approve")
        q = next(x for x in sim.api("GET", f"/v1/queues?environment={ENV}")["items"]
                 if x["name"] == "tf-q")
        expect(q["weight"] == 2, "fleetd has the updated weight")
        expect(sim.api("GET", f"/v1/environments/{ENV}")["pod_policy"]["volume_kinds"] ==
               ["persistent_volume_claim"], "fleetd has the updated pod_policy")
        tf.plan_clean("after the in-place update")

        # dashboard_ingress: set (fleetd fills path, path_type and controller_namespace),
        # drift through the API planned back, read back by an import, removed with the block
        v["env_ingress"] = """
  dashboard_ingress = {
    host       = "ray.tfprod.example.com"
    tls_secret = "ray-dashboard-tls"
  }"""
        tf.write(main_tf(sim, v))
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect("fleet_environment.e will be updated in-place" in r.stdout and
               re.search(r"\+ dashboard_ingress\s+= \{", r.stdout) and
               re.search(r"\+ path\s+= \(known after apply\)", r.stdout) and
               "0 to add, 1 to change, 0 to destroy" in r.stdout,
               "dashboard_ingress planned in place, fleetd's defaults known after apply")
        tf.run("apply", "-input=false", "-auto-approve")
        want = {"host": "ray.tfprod.example.com", "path": "/", "path_type": "Prefix",
                "tls_secret": "ray-dashboard-tls", "controller_namespace": "ingress-nginx"}
        envj = sim.api("GET", f"/v1/environments/{ENV}")
        expect(envj["dashboard_ingress"] == want,
               f"fleetd has the dashboard_ingress ({envj['dashboard_ingress']})")
        attrs = next(r_["instances"][0]["attributes"] for r_ in tf.state()["resources"]
                     if r_["type"] == "fleet_environment")
        expect(attrs["dashboard_ingress"] == want, "the state has fleetd's defaults")
        tf.plan_clean("after setting dashboard_ingress")
        sim.api("PUT", f"/v1/environments/{ENV}", {
            "name": ENV, "description": envj["description"],
            "dashboard_ingress": {"host": "other.example.com", "tls_secret": "ray-dashboard-tls"}})
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect(re.search(r'~ host\s+= "other.example.com" -> "ray.tfprod.example.com"', r.stdout),
               "drift of dashboard_ingress.host planned back")
        tf.run("apply", "-input=false", "-auto-approve")
        expect(sim.api("GET", f"/v1/environments/{ENV}")["dashboard_ingress"] == want,
               "the drift corrected")
        tf.run("state", "rm", "fleet_environment.e")
        tf.run("import", "-input=false", "fleet_environment.e", ENV)
        attrs = next(r_["instances"][0]["attributes"] for r_ in tf.state()["resources"]
                     if r_["type"] == "fleet_environment")
        expect(attrs["dashboard_ingress"] == want, "import reads dashboard_ingress back")
        tf.plan_clean("after importing the environment with its dashboard_ingress")
        v["env_ingress"] = ""
        tf.write(main_tf(sim, v))
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect(re.search(r"- dashboard_ingress\s+= \{", r.stdout) and
               "0 to add, 1 to change, 0 to destroy" in r.stdout,
               "removing the block plans dashboard_ingress away")
        tf.run("apply", "-input=false", "-auto-approve")
        expect(sim.api("GET", f"/v1/environments/{ENV}")["dashboard_ingress"] is None,
               "fleetd has no dashboard_ingress after the block is removed")
        tf.plan_clean("after removing dashboard_ingress")

        # replacement (a token's role is immutable)
        v.update(token_role="operator")
        tf.write(main_tf(sim, v))
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect("fleet_api_token.ci must be replaced" in r.stdout and
               "# forces replacement" in r.stdout, "replacement planned for an immutable field")
        old_tok = tf.state()
        tf.run("apply", "-input=false", "-auto-approve")
        tf.plan_clean("after the replacement")

        # drift through the API: a changed field and a deleted object
        sim.api("PUT", f"/v1/queues/{q['id']}", {
            "name": "tf-q", "environment": ENV, "weight": 7, "nominal_quota": {H100: 8},
            "default_priority_class": "tf-normal"})
        pc = next(x for x in sim.api("GET", "/v1/priority-classes?limit=100")["items"]
                  if x["name"] == "tf-normal")
        tok_id = next(r_["instances"][0]["attributes"]["id"] for r_ in tf.state()["resources"]
                      if r_["type"] == "fleet_api_token")
        sim.api("DELETE", f"/v1/tokens/{tok_id}", ok=(204,))
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect(re.search(r"~ weight\s+= 7 -> 2", r.stdout) and
               "fleet_api_token.ci will be created" in r.stdout,
               "drift planned: weight 7 -> 2 and the deleted token re-created")
        tf.run("apply", "-input=false", "-auto-approve")
        tf.plan_clean("after correcting the drift")

        # a write over a change made after the plan is refused (If-Match: 412), not lost
        v.update(weight=4)
        tf.write(main_tf(sim, v))
        tf.run("plan", "-input=false", "-out=stale.plan")
        sim.api("PUT", f"/v1/queues/{q['id']}", {
            "name": "tf-q", "environment": ENV, "weight": 9, "nominal_quota": {H100: 8},
            "default_priority_class": "tf-normal"})
        r = tf.run("apply", "-input=false", "stale.plan", ok=(1,))
        expect("412" in r.stderr + r.stdout and "api.precondition_failed" in r.stderr + r.stdout,
               "applying a plan over a change made since answers 412 (If-Match), nothing lost")
        r = tf.run("plan", "-input=false", "-detailed-exitcode", ok=(2,))
        expect(re.search(r"~ weight\s+= 9 -> 4", r.stdout), "the next plan shows 9 -> 4")
        tf.run("apply", "-input=false", "-auto-approve")
        tf.plan_clean("after the stale write")

        # import of an object made through the API
        q2 = sim.api("POST", "/v1/queues", {"name": "tf-imported", "environment": ENV,
                                            "weight": 3, "cohort": "ml",
                                            "default_priority_class": pc["name"]}, ok=(201,))
        v["extra"] = '''
resource "fleet_queue" "imported" {
  name                   = "tf-imported"
  environment            = fleet_environment.e.name
  weight                 = 3
  cohort                 = "ml"
  default_priority_class = fleet_priority_class.normal.name
}
'''
        tf.write(main_tf(sim, v))
        tf.run("import", "-input=false", "fleet_queue.imported", q2["id"])
        tf.plan_clean("after import")
        tf.run("import", "-input=false", "fleet_environment.e2", ENV, ok=(1,))  # not in config
        # a cloud (typed nested account and iam_required) and its phase 2, imported by id
        hp_id = next(c["id"] for c in sim.api("GET", "/v1/clouds?limit=100")["items"]
                     if c["name"] == "tf-hp-usw2")
        tf.run("state", "rm", "fleet_cloud.hp", "fleet_cloud_iam.hp")
        tf.run("import", "-input=false", "fleet_cloud.hp", hp_id)
        tf.run("import", "-input=false", "fleet_cloud_iam.hp", hp_id)
        tf.plan_clean("after importing a cloud and its phase 2")

        # 503 then 429, each with Retry-After: 1, are retried after the wait
        flaky = Flaky(fleetd.url)
        try:
            tf.env = dict(env, FLEET_URL=flaky.url)
            tf.plan_clean("through a proxy answering 503 and 429 first")
        finally:
            tf.env = env
            flaky.close()
        s0, s1, s2 = flaky.seen[0], flaky.seen[1], flaky.seen[2]
        expect(s0[3] == 503 and s1[3] == 429 and s1[2] == s0[2] and s2[2] == s0[2] and
               s1[0] - s0[0] >= 0.9 and s2[0] - s1[0] >= 0.9 and s2[3] == 200,
               "503 and 429 retried after Retry-After (1 s each), then answered 200")

        # ca_cert: fleetd over HTTPS with a private CA is trusted only with it
        tls_url, ca_pem = tls_fleetd(sim, work)
        ca = TF(os.path.join(work, "ca"), dict(env, FLEET_URL=tls_url))
        shutil.copy(os.path.join(tf.dir, ".terraform.lock.hcl"), ca.dir)
        ca.write(CA_TF % f'file("{ca_pem}")')
        ca.run("init", "-input=false")
        ca.run("plan", "-input=false")
        ca.write(CA_TF % "null")
        r = ca.run("plan", "-input=false", ok=(1,))
        expect("fleetd GET /v1/capacity failed" in r.stdout + r.stderr,
               "HTTPS to fleetd works with ca_cert and fails without it")
        tls = sim.procs.pop("tls")
        tls.popen.terminate()
        tls.popen.wait(timeout=30)

        # docs/ is what gendocs makes of this provider's schema, and every example validates
        gen = os.path.join(work, "docs")
        subprocess.run([sys.executable, os.path.join(TOP, "terraform/provider/gendocs.py"), build,
                        gen], check=True, capture_output=True, env=env, timeout=120)
        # docs/design is the design's own documentation, not the registry's pages
        d = subprocess.run(["diff", "-r", "-x", "design", os.path.join(TOP, "docs"), gen],
                           capture_output=True, text=True)
        expect(d.returncode == 0, "docs/ matches the provider's schema (make provider-docs)"
               + ("" if d.returncode == 0 else ":\n" + d.stdout[-3000:]))
        sys.path.insert(0, os.path.join(TOP, "terraform", "provider"))
        import gendocs  # noqa: PLC0415
        ex = TF(os.path.join(work, "examples"), env)
        ex.write('terraform {\n  required_providers {\n    fleet = { source = "fleetd/fleet" }\n'
                 '  }\n}\n\n' + "\n\n".join(gendocs.EXAMPLES.values()) + "\n")
        open(os.path.join(ex.dir, "ray-a-ca.pem"), "w").write(sim.ca)
        shutil.copy(os.path.join(tf.dir, ".terraform.lock.hcl"), ex.dir)
        ex.run("init", "-input=false")
        ex.run("validate")
        ex.run("fmt", "-check", "-diff")
        r = tf.run("fmt", "-check", "-recursive", "-diff", os.path.join(TOP, "terraform"), ok=(0, 3))
        expect(r.returncode == 0, "terraform fmt -check: terraform/ and the doc examples"
               + ("" if r.returncode == 0 else ":\n" + r.stdout[-2000:]))
        expect(True, f"the {len(gendocs.EXAMPLES)} documentation examples validate together")

        # plan-time validation names each attribute
        bad = TF(os.path.join(work, "bad"), env)
        bad.write(BAD_TF)
        shutil.copy(os.path.join(tf.dir, ".terraform.lock.hcl"), bad.dir)
        bad.run("init", "-input=false")
        r = bad.run("validate", ok=(1,))
        out = r.stdout + r.stderr
        for attr, needle in (("name", 'Attribute "name" must match'),
                             ("weight", 'Attribute "weight" must be greater than 0'),
                             ("nominal_quota", 'Attribute "nominal_quota" quantity'),
                             ("region", 'Attribute "region": mars-north1 is not a gke region'),
                             ("account.project", 'Attribute "account.project" is required'),
                             ("account.account_id", 'Attribute "account.account_id" belongs'),
                             ("role", 'Attribute "role" must be one of'),
                             ("cluster_role", 'Attribute "cluster_role" must differ'),
                             ("api_server", 'Attribute "api_server" must be an https://'),
                             ("batch_scheduler", 'Attribute "batch_scheduler" must be one of'),
                             ("dashboard_ingress.path",
                              'Attribute "dashboard_ingress.path" must start with /'),
                             ("dashboard_ingress.path_type",
                              'Attribute "dashboard_ingress.path_type" must be one of')):
            expect(needle in out, f"validation names {attr}")
        expect(out.count("Error:") >= 12, "each invalid attribute is its own error")

        # a failed phase 2 fails the apply with each failed check
        f2 = TF(os.path.join(work, "fail"), env)
        f2.write(fail_iam_tf(sim))
        shutil.copy(os.path.join(tf.dir, ".terraform.lock.hcl"), f2.dir)
        f2.run("init", "-input=false")
        # verification keeps failing; Ctrl-C (StopProvider) ends the wait long before the
        # 60 s iam_verification_timeout, and the apply fails with the checks of the last try
        t0 = time.time()
        p = subprocess.Popen(["terraform", "apply", "-input=false", "-auto-approve", "-no-color"],
                             cwd=f2.dir, env=f2.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        while time.time() - t0 < 60 and not any(
                c["name"] == "tf-hp-use1" for c in sim.api("GET", "/v1/clouds?limit=100")["items"]):
            time.sleep(0.2)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        try:
            so, se = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
        took = time.time() - t0
        log(f"terraform apply (interrupted) -> {p.returncode} ({took:.1f}s)")
        out = so + se
        expect(p.returncode == 1 and took < 30 and "Interrupt received" in out,
               f"Ctrl-C stops a phase 2 waiting for verification ({took:.1f}s of a 60 s timeout)")
        # one error per failed check (Terraform wraps long lines: match across whitespace)
        checks = re.findall(r"iam\.verification_failed:\s+check\s+(\w+)", out)
        errors = out.count("Error: fleetd could not verify the IAM pair")
        expect(len(checks) >= 2 and errors == len(checks) and
               "control_plane_role_cloud_tag" in checks and "cluster_role_cloud_tag" in checks,
               f"failed phase 2 fails the apply with one error per failed check ({', '.join(checks)})")
        f2.run("destroy", "-input=false", "-auto-approve")

        # the state: no cluster credential, no provider key, the token secret marked sensitive
        raw = open(os.path.join(tf.dir, "terraform.tfstate")).read()
        for name, secret in sim.secrets.items():
            if name == "admin api token" or secret in ("",):
                continue
            expect(secret not in raw, f"state holds no {name}")
        expect(sim.admin not in raw, "state holds no provider token")
        st = tf.state()
        tok = next(r_ for r_ in st["resources"] if r_["type"] == "fleet_api_token")
        inst = tok["instances"][0]
        expect(inst["attributes"]["secret"].startswith("fleet_") and
               {"type": "get_attr", "value": "secret"} in
               [p for path in inst.get("sensitive_attributes", []) for p in path],
               "the token secret is in the state only as a sensitive value")
        cl = next(r_ for r_ in st["resources"] if r_["type"] == "fleet_cluster")
        expect(cl["instances"][0]["attributes"]["token_wo"] is None,
               "the write-only cluster token is null in the state")
        r = tf.run("output")
        expect("<sensitive>" in r.stdout and inst["attributes"]["secret"] not in r.stdout,
               "outputs show the secret as <sensitive>")
        del old_tok

        # destroy leaves nothing
        tf.run("destroy", "-input=false", "-auto-approve", timeout=180)
        left = []
        for path in ("/v1/clouds?limit=100", f"/v1/queues?environment={ENV}",
                     "/v1/priority-classes?limit=100", "/v1/clusters?limit=100"):
            items = sim.api("GET", path, ok=(200, 404)) or {}
            left += [f"{path}: {x.get('name')}" for x in items.get("items", [])
                     if str(x.get("name", "")).startswith("tf-")]
        toks = sim.api("GET", "/v1/tokens?limit=100")["items"]
        left += [f"token {t['name']}" for t in toks if t["name"] == "tf-ci" and not t["revoked"]]
        st_env, _, _ = sim.http("GET", f"{fleetd.url}/v1/environments/{ENV}")
        st_fl, _, _ = sim.http("GET", f"{fleetd.url}/v1/flavors/tf-b300")
        expect(st_env == 404 and st_fl == 404 and not left,
               f"destroy left nothing in fleetd ({left}, flavor {st_fl})")

        # the provider ran clean under the sanitizers
        logtxt = open(os.path.join(work, "tf.log"), errors="replace").read() \
            if os.path.exists(os.path.join(work, "tf.log")) else ""
        expect("AddressSanitizer" not in logtxt and "LeakSanitizer" not in logtxt and
               "runtime error" not in logtxt and
               not re.search(r"plugin process exited:.*error=", logtxt) and
               "plugin process exited" in logtxt,
               "no sanitizer report from the provider; every provider process exited 0")
        log(f"provider cycle passed in {time.time() - t_start:.1f}s")
        return 0
    finally:
        sim.stop_all()


if __name__ == "__main__":
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, "build/asan"))
    work = os.environ.get("TF_CYCLE_WORK") or subprocess.run(
        ["mktemp", "-d", "/tmp/fleetd-tf.XXXXXX"], capture_output=True, text=True).stdout.strip()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        rc = run(build, work)
    except CheckFailed as ex:
        log("FAILED:", ex)
        log("work dir kept:", work)
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(rc)
