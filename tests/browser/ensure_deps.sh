#!/usr/bin/env bash
# ensure_deps: installs the pinned npm packages of tests/browser (package-lock.json) into
# tests/browser/node_modules when they are missing; serialized with flock, since several runs may
# ask at the same time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "browser: node is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "browser: npm is required" >&2; exit 1; }

have() {
	node -e '
		const [dir, ...want] = process.argv.slice(1);
		for (const w of want) {
			const at = w.lastIndexOf("@");
			const name = w.slice(0, at), version = w.slice(at + 1);
			let got;
			try { got = require(`${dir}/node_modules/${name}/package.json`).version; } catch (e) {}
			if (got !== version) process.exit(1);
		}' "$here" "$@"
}

# name@version of every direct dependency, from package.json
mapfile -t want < <(node -e '
	const p = require(process.argv[1]);
	for (const [n, v] of Object.entries(p.dependencies)) console.log(`${n}@${v}`);' \
	"$here/package.json")
have "${want[@]}" && exit 0
exec 9>"$here/.install.lock"
flock 9
have "${want[@]}" && exit 0
echo "browser: installing ${want[*]} into $here/node_modules" >&2
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2)
have "${want[@]}" || { echo "browser: npm ci did not install ${want[*]}" >&2; exit 1; }
