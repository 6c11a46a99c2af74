#!/usr/bin/env bash
# tests/count_cases.sh [TREE] [BUILD_DIR] — counts the test cases of a tree, one line per
# file, so that a refactoring of the tests can show none was lost (issue 15).
#   C (cmocka): entries of the CMUnitTest tables (`const struct CMUnitTest x[] = { … };`):
#               each line in it that opens an entry — cmocka_unit_test*(…), a macro such
#               as T(…), or a literal row `{ "name", fn, … }`.
#   Python:     check calls: expect(…) (tests/terraform) and .ok(…) (tests/chaos).
#   JS:         it(…) / test(…) cases.
#   ctest:      with BUILD_DIR, the number of ctest tests (`ctest -N`).
# Output: "<count> <path>" lines, then "total <n> cases in <m> files".
set -euo pipefail
tree=${1:-.}
build=${2:-}
cd "$tree"
total=0 files=0
while IFS= read -r f; do
	case $f in
	*.c)  n=$(awk '/CMUnitTest[[:space:]]+[a-z_]+\[\][[:space:]]*=/ { t = 1; next }
		t && /^[[:space:]]*};/ { t = 0 }
		t && /^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(|\{[[:space:]]*")/ { n++ }
		END { print n + 0 }' "$f")
	      # a table filled at run time (test_sigv4): count the cmocka_unit_test* uses
	      [ "$n" -gt 0 ] || n=$(grep -cE 'cmocka_unit_test[a-z_]*\(' "$f" || true) ;;
	*.py) n=$(grep -cE '(^|[^a-z_])expect\(|\.ok\(' "$f" || true) ;;
	*.js) n=$(grep -cE '^[[:space:]]*(it|test)\(' "$f" || true) ;;
	esac
	[ "$n" -gt 0 ] || continue
	printf '%4d %s\n' "$n" "$f"
	total=$((total + n)) files=$((files + 1))
done < <(find tests -type f \( -name 'test_*.c' -o -name '*.py' -o -name '*.test.js' \) \
	-not -path '*/node_modules/*' | sort)
echo "total $total cases in $files files"
if [ -n "$build" ]; then
	echo "ctest $(cd "$build" && ctest -N | sed -n 's/^Total Tests: //p') tests"
fi
