#!/usr/bin/env bash
# check_monitoring.sh - the monitoring files under docs/monitoring are valid:
#   * the alert rules pass `promtool check rules` and their unit tests
#     (`promtool test rules`);
#   * the Grafana dashboard is JSON with the fields Grafana needs (title,
#     uid, panels with unique ids, a grid position, a Prometheus data source
#     and at least one query each), checked with jq;
#   * every panel query parses as PromQL: they are handed to `promtool check
#     rules` as recording rules (Grafana's $__rate_interval and $variables
#     replaced by plain values first).
# Run by `tools/setup.sh test`. Needs promtool (Debian prometheus) and jq.
set -euo pipefail
dir=$(cd "$(dirname "$0")/../docs/monitoring" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

promtool check rules "$dir/namesrv-alerts.yml"
(cd "$dir" && promtool test rules namesrv-alerts.test.yml)

dash="$dir/namesrv-dashboard.json"
jq -e '
  (.title | type == "string" and length > 0) and
  (.uid | type == "string" and length > 0) and
  (.panels | type == "array" and length > 0) and
  ([.panels[].id] | length == (unique | length)) and
  all(.panels[];
      (.gridPos | (.x >= 0) and (.y >= 0) and (.w > 0) and (.h > 0) and (.x + .w <= 24)) and
      (.datasource.type == "prometheus") and
      (.targets | type == "array" and length > 0) and
      all(.targets[]; (.expr | type == "string" and length > 0) and (.refId | type == "string")))
' "$dash" >/dev/null || { echo "check_monitoring: $dash fails the dashboard lint" >&2; exit 1; }

{
    echo "groups:"
    echo "  - name: dashboard-queries"
    echo "    rules:"
    jq -r '.panels[] | .id as $p | .targets[] | "\($p)_\(.refId)\t\(.expr)"' "$dash" |
        while IFS=$'\t' read -r id expr; do
            expr=${expr//\$__rate_interval/1m}
            expr=${expr//\$job/namesrv}
            expr=${expr//\$instance/.*}
            printf '      - record: dashboard:panel_%s\n        expr: %s\n' "$id" \
                "$(jq -Rn --arg e "$expr" '$e')"
        done
} >"$work/queries.yml"
promtool check rules "$work/queries.yml" >/dev/null ||
    { promtool check rules "$work/queries.yml"; echo "check_monitoring: a dashboard query is not PromQL" >&2; exit 1; }
echo "check_monitoring: alert rules, their tests and $(jq '[.panels[].targets[]] | length' "$dash") dashboard queries OK"
