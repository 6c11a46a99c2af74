#!/usr/bin/env bash
# ensure_deps: installs the pinned npm packages of tests/conformance (package-lock.json) into
# tests/conformance/node_modules when they are missing; serialized with flock.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "conformance: node is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "conformance: npm is required" >&2; exit 1; }

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

mapfile -t want < <(node -e '
	const p = require(process.argv[1]);
	for (const [n, v] of Object.entries(p.dependencies)) console.log(`${n}@${v}`);' \
	"$here/package.json")
have "${want[@]}" && exit 0
exec 9>"$here/.install.lock"
flock 9
have "${want[@]}" && exit 0
echo "conformance: installing ${want[*]} into $here/node_modules" >&2
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2)
have "${want[@]}" || { echo "conformance: npm ci did not install ${want[*]}" >&2; exit 1; }
