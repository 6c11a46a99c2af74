"""fleetapi: one JSON call to fleetd or cloudsim, for the scripts that register fleets
(scripts/demo.py, bench/capacity_fleet.py).  Standard library only."""
import json
import urllib.error
import urllib.request


def call(method, url, token=None, body=None, timeout=60):
    """(status, parsed JSON body or None, or the text of a body that is not JSON); token
    None: no Authorization header.  An HTTP error status is an answer, not an exception."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


def post_or_exit(api, token, path, body, timeout=600):
    """POST body to api + path; the answer's JSON, or the program exits naming the status."""
    status, answer = call("POST", api + path, token, body, timeout)
    if status >= 300:
        raise SystemExit("POST %s: %s %s" % (path, status, answer))
    return answer


def sql(db, statement):
    """One statement through psql on database URL db; its output, stripped."""
    import subprocess
    return subprocess.run(["psql", "-qAt", db, "-c", statement], check=True,
                          capture_output=True, text=True).stdout.strip()
