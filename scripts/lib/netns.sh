# Network namespaces as hosts on one switch, for the tests and benchmarks that run a job across
# "hosts" on one machine (tests/multihost, tests/noalarm, bench/cluster). Source it; it only
# defines functions. Needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2.
#
# The switch is a namespace holding a bridge br0 at NET.1/24 (NET a /24 prefix: 10.77.0); host K
# is a namespace joined to the bridge by a veth pair, with eth0 at NET.(K+1)/24 and its default
# route through the switch. The caller names the namespaces (with its pid in them, so that runs
# side by side never clash) and deletes them on every exit path with netns_delete.

# netns_switch NS NET: the switch namespace NS with bridge br0 at NET.1/24, up. Returns 1 when the
# namespace cannot be made, 2 when the bridge cannot.
netns_switch() {
  local ns=$1 net=$2
  ip netns add "$ns" 2>/dev/null || return 1
  { ip -n "$ns" link set lo up && ip -n "$ns" link add br0 type bridge &&
    ip -n "$ns" addr add "$net.1/24" dev br0 && ip -n "$ns" link set br0 up; } || return 2
  # A switch forwards frames without a firewall: with br_netfilter loaded, each frame the bridge
  # forwards would also run the iptables hooks (9% of the CPU of a 2-host 8 B AllReduce loop).
  local k
  for k in iptables ip6tables arptables; do
    ip netns exec "$ns" sysctl -qw "net.bridge.bridge-nf-call-$k=0" 2>/dev/null
  done
  return 0
}

# netns_host SWITCH NS VETH NET K [MTU]: host namespace NS on SWITCH's bridge through the veth
# pair VETH (the switch's end) - eth0 (the host's end), eth0 at NET.(K+1)/24, default route via
# NET.1; both ends MTU when given. Non-zero when a step fails.
netns_host() {
  local sw=$1 ns=$2 veth=$3 net=$4 k=$5 mtu=()
  [ -n "${6:-}" ] && mtu=(mtu "$6")
  ip netns add "$ns" || return 1
  ip link add "$veth" netns "$sw" "${mtu[@]}" type veth peer name eth0 netns "$ns" "${mtu[@]}" &&
    ip -n "$sw" link set "$veth" master br0 up &&
    ip -n "$ns" link set lo up &&
    ip -n "$ns" addr add "$net.$((k + 1))/24" dev eth0 &&
    ip -n "$ns" link set eth0 up &&
    ip -n "$ns" route add default via "$net.1"
}

# netns_delete NS...: kills every process left in each namespace, then deletes it. Quiet, and
# harmless for a name that was never made.
netns_delete() {
  local ns pids
  for ns in "$@"; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}
