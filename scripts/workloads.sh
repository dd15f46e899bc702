# Sourced by the per-workload scripts: the workloads of bench/workloads.txt (or of the file
# LOOM_WORKLOADS names, e.g. bench/workloads_backward.txt) as `loom bench` arguments.
#   for_each_workload REGEX FN   calls FN NAME FUSION ARGS... for each workload whose line
#                                matches REGEX (ARGS: --dtype, --dim and --layout options;
#                                a fusion file's --dtype is left out: it has its own)
for_each_workload() {
  local filter=$1 fn=$2 name fusion dtype dims layouts _ ds d ls l
  grep -v '^#' "${LOOM_WORKLOADS:-bench/workloads.txt}" | grep -E "\S" | grep -E "$filter" | while read -r name fusion dtype dims layouts _; do
    local args=()
    # A fusion file has its own dtypes (its line's dtype names them for the peers).
    [ "$dtype" != "-" ] && [[ $fusion != *.loom ]] && args+=(--dtype "$dtype")
    if [ "$dims" != "-" ]; then
      IFS=, read -ra ds <<<"$dims"
      for d in "${ds[@]}"; do args+=(--dim "$d"); done
    fi
    if [ "$layouts" != "-" ]; then  # IN=L,IN=L; an L of dims keeps its commas (x=1,0)
      IFS=, read -ra ls <<<"$layouts"
      local each=()
      for l in "${ls[@]}"; do
        if [[ $l == *=* || ${#each[@]} -eq 0 ]]; then each+=("$l"); else each[-1]+=",$l"; fi
      done
      for l in "${each[@]}"; do args+=(--layout "$l"); done
    fi
    "$fn" "$name" "$fusion" "${args[@]}"
  done
}
