#!/usr/bin/env bash
# Bad-input test: `bdc inspect` on every entry of tests/malformed/expected.txt.
#
# Usage: tests/test_malformed.sh [BDC]        (default: $BDC, else <repo>/build/bdc)
#
# Each corpus entry (made by tests/malformed/make_corpus.py) is a small model with exactly one
# defect: not protobuf, a cycle, an undefined or doubly-defined name, initializer bytes that do
# not fit the dims, sizes that overflow, 10,000 nested subgraphs, external data that escapes the
# model's folder or lies outside its file. Why: the loader must never trust the file; bad input
# gets a clean exit code and one line naming the problem, never a crash, hang or stray read.
# For every entry, run both `bdc inspect FILE` and `bdc inspect FILE --json`, and check
#   - the exit code is the expected one, and the process did not die by a signal or time out,
#   - stderr is exactly one line matching the entry's regex (grep -P), or empty for `-`,
#   - on a nonzero exit the line starts with `bdc: error: `, and with --json on exit 2/4
#     nothing is printed on stdout; on exit 0 --json prints a JSON object,
#   - both modes give the same exit code and message.
# Every .onnx file in the corpus must have an entry. With BDC_SANITIZED=1, any sanitizer report
# ('runtime error:', 'AddressSanitizer', ...) in stderr is a failure too.
# Prints one line per case and closes with `N passed, M failed`; exits 1 if anything failed.

set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
corpus="$here/malformed"
bdc="${1:-${BDC:-$here/../build/bdc}}"
timeout_s="${BDC_TIMEOUT:-60}"

if [ ! -x "$bdc" ]; then
    echo "test_malformed: bdc not found or not executable: $bdc (pass it as \$1 or set BDC)" >&2
    exit 1
fi
if ! echo x | grep -qP 'x' 2>/dev/null; then
    echo "test_malformed: this grep has no -P (PCRE) support" >&2
    exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ulimit -c 0  # a crash is reported below; no core files in the tree

passed=0
failed=0

# run_bdc MODE FILE: runs bdc, sets rc; stdout/stderr in $tmp/MODE.out, $tmp/MODE.err
run_bdc() {
    local mode="$1" file="$2"
    local args=(inspect "$file")
    [ "$mode" = json ] && args+=(--json)
    timeout -k 5 "$timeout_s" "$bdc" "${args[@]}" </dev/null >"$tmp/$mode.out" 2>"$tmp/$mode.err"
    rc=$?
}

# line_count FILE: lines, counting a last line without a newline
line_count() { awk 'END { print NR }' "$1"; }

# check_case FILE CODE REGEX: prints nothing on success, else the reason
check_case() {
    local file="$1" code="$2" regex="$3" mode rc_plain err_plain
    for mode in plain json; do
        run_bdc "$mode" "$corpus/$file"
        local err="$tmp/$mode.err" out="$tmp/$mode.out" first
        first="$(head -n 1 "$err")"
        if [ "${BDC_SANITIZED:-0}" = 1 ] &&
            grep -qE 'runtime error:|AddressSanitizer|LeakSanitizer|MemorySanitizer|ThreadSanitizer' "$err"; then
            echo "[$mode] sanitizer report: $(grep -m 1 -E 'runtime error:|Sanitizer' "$err")"
            return
        fi
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            echo "[$mode] timed out after ${timeout_s}s"
            return
        fi
        if [ "$rc" -gt 128 ]; then
            echo "[$mode] killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null))"
            return
        fi
        if [ "$rc" != "$code" ]; then
            echo "[$mode] exit $rc, expected $code${first:+ (stderr: $first)}"
            return
        fi
        if [ "$regex" = - ]; then
            if [ -s "$err" ]; then
                echo "[$mode] expected empty stderr, got: $first"
                return
            fi
        else
            local lines
            lines="$(line_count "$err")"
            if [ "$lines" != 1 ]; then
                echo "[$mode] stderr has $lines lines, expected 1${first:+ (first: $first)}"
                return
            fi
            if [ "$code" != 0 ] && [ "${first#bdc: error: }" = "$first" ]; then
                echo "[$mode] message does not start with 'bdc: error: ': $first"
                return
            fi
            if ! grep -qP -- "$regex" "$err"; then
                echo "[$mode] message does not match /$regex/: $first"
                return
            fi
        fi
        if [ "$mode" = json ]; then
            if { [ "$code" = 2 ] || [ "$code" = 4 ]; } && [ -s "$out" ]; then
                echo "[json] exit $code but stdout is not empty: $(head -c 80 "$out")"
                return
            fi
            if [ "$code" = 0 ] && [ "$(tr -d ' \t\r\n' <"$out" | head -c 1)" != "{" ]; then
                echo "[json] exit 0 but stdout is not a JSON object: $(head -c 80 "$out")"
                return
            fi
            if [ "$rc" != "$rc_plain" ] || [ "$(cat "$err")" != "$err_plain" ]; then
                echo "[json] differs from plain mode: exit $rc vs $rc_plain, '$first' vs '$err_plain'"
                return
            fi
        else
            rc_plain="$rc"
            err_plain="$(cat "$err")"
        fi
    done
}

declare -A listed=()
while read -r file code regex; do
    case "$file" in '' | '#'*) continue ;; esac
    listed["$file"]=1
    if [ ! -e "$corpus/$file" ]; then
        echo "FAIL $file: listed in expected.txt but missing (rerun make_corpus.py)"
        failed=$((failed + 1))
        continue
    fi
    reason="$(check_case "$file" "$code" "$regex")"
    if [ -z "$reason" ]; then
        msg="$(head -n 1 "$tmp/plain.err")"
        echo "PASS $file (exit $code${msg:+: $msg})"
        passed=$((passed + 1))
    else
        echo "FAIL $file: $reason"
        failed=$((failed + 1))
    fi
done <"$corpus/expected.txt"

while IFS= read -r path; do
    rel="${path#"$corpus"/}"
    if [ -z "${listed[$rel]:-}" ]; then
        echo "FAIL $rel: corpus file has no line in expected.txt"
        failed=$((failed + 1))
    fi
done < <(find "$corpus" -name '*.onnx' | sort)

echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
