# Loaded by the bats files that run against a real control plane (cluster.bats, plugin.bats).
#
# cluster_up [COMMAND...]: in setup_file, a control plane in $BATS_FILE_TMPDIR/cluster
# (exported as CLUSTER_DIR) with Cozystack's apps stood in for, then COMMAND (e.g. starting
# policy-server); when any step fails, teardown_file runs, so nothing is left running.
cluster_up() {
    cd "$BATS_TEST_DIRNAME" || return 1
    export CLUSTER_DIR="$BATS_FILE_TMPDIR/cluster"
    if ! {
        bash scripts/cluster/control-plane.sh up "$CLUSTER_DIR" >&3 2>&1 &&
            bash scripts/cluster/cozystack-apps.sh install "$CLUSTER_DIR" &&
            { [ $# -eq 0 ] || "$@"; }
    }; then
        teardown_file
        return 1
    fi
}
