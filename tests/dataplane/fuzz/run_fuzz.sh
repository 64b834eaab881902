#!/bin/sh
# Runs a fuzzer for a bounded time (suite 'fuzz'): $1 fuzzer binary, $2 seed corpus,
# $3 seconds. New inputs go to a scratch corpus in the build tree (the seeds stay as
# committed); a crash leaves its input there and fails the test (libFuzzer's own exit code
# for a crash is 77, which meson reads as a skip: hence -error_exitcode=1).
set -eu
fuzzer=$1 seeds=$2 seconds=$3
work=$(dirname "$fuzzer")/$(basename "$fuzzer")_work
mkdir -p "$work/corpus"
exec "$fuzzer" -max_total_time="$seconds" -timeout=5 -error_exitcode=1 -timeout_exitcode=1 -rss_limit_mb=1024 -max_len=9100 \
  -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" "$seeds"
