#!/usr/bin/env bash
# Build one Lambda deployment package per function for provided.al2023 / arm64:
#   build/<function>/bootstrap  (static, stripped, no RPC shim)
#   build/<function>.zip        (bootstrap + sluice.yaml, the config the function reads
#                                unless SLUICE_CONFIG_PARAMETER names an SSM parameter)
# Usage: infra/package.sh [CONFIG]   (CONFIG defaults to testdata/sluice.yaml)
# GOARCH and OUT may be overridden (the integration test builds the host arch).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-${CONFIG:-testdata/sluice.yaml}}
OUT=${OUT:-build}
GOARCH=${GOARCH:-arm64}
GO=${GO:-go}
command -v zip >/dev/null || { echo "package: zip is missing (apt-get install zip)" >&2; exit 1; }
[ -f "$CONFIG" ] || { echo "package: config $CONFIG not found" >&2; exit 1; }
for fn in burst drain reconcile; do
	mkdir -p "$OUT/$fn"
	CGO_ENABLED=0 GOOS=linux GOARCH=$GOARCH "$GO" build -tags lambda.norpc -trimpath -ldflags "-s -w" \
		-o "$OUT/$fn/bootstrap" "./functions/$fn"
	cp "$CONFIG" "$OUT/$fn/sluice.yaml"
	rm -f "$OUT/$fn.zip"
	# -X: no extra file attributes, so the zip depends only on the two files.
	(cd "$OUT/$fn" && zip -q -X "../$fn.zip" bootstrap sluice.yaml)
	printf '%-10s bootstrap %9d bytes   zip %9d bytes\n' "$fn" \
		"$(stat -c %s "$OUT/$fn/bootstrap")" "$(stat -c %s "$OUT/$fn.zip")"
done
