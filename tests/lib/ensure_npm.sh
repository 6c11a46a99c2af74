#!/usr/bin/env bash
# tests/lib/ensure_npm.sh DIR — installs the pinned npm packages of DIR (its package.json
# names exact versions, its package-lock.json pins the rest) into DIR/node_modules when one
# is missing or has another version.  Serialized with flock on DIR/.install.lock, since
# several tests may ask at once (the openapi lint and every integration test's response
# validation, for example).  Used by tests/{openapi,conformance,browser,terraform}.
set -euo pipefail
dir=$(cd "${1:?usage: ensure_npm.sh DIR}" && pwd)
what=$(basename "$dir")
command -v node >/dev/null || { echo "$what: node is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "$what: npm is required" >&2; exit 1; }

have() {
	node -e '
		const [dir, ...want] = process.argv.slice(1);
		for (const w of want) {
			const at = w.lastIndexOf("@");
			const name = w.slice(0, at), version = w.slice(at + 1);
			let got;
			try { got = require(`${dir}/node_modules/${name}/package.json`).version; } catch (e) {}
			if (got !== version) process.exit(1);
		}' "$dir" "$@"
}

# name@version of every direct dependency, from package.json
mapfile -t want < <(node -e '
	const p = require(process.argv[1]);
	for (const [n, v] of Object.entries(p.dependencies)) console.log(`${n}@${v}`);' \
	"$dir/package.json")
have "${want[@]}" && exit 0
exec 9>"$dir/.install.lock"
flock 9
have "${want[@]}" && exit 0
echo "$what: installing ${want[*]} into $dir/node_modules" >&2
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
have "${want[@]}" || { echo "$what: npm ci did not install ${want[*]}" >&2; exit 1; }
