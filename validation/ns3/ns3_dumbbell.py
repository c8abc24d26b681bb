#!/usr/bin/env python3
"""ns-3 reference run of TCP congestion controls on a dumbbell.

Topology (one bottleneck, every flow with its own hosts and access links):

    sender_i --access--> left router ==bottleneck==> right router --access--> receiver_i

Defaults: 1 Gbit/s / 1 ms access links, 200 Mbit/s / 98 ms bottleneck, so the
base round-trip time is 2 * (1 + 98 + 1) ms = 200 ms and the bandwidth-delay
product is 200e6 * 0.2 / 8 = 5 MB, about 3333 packets of 1500 bytes.  The
bottleneck queue is a drop-tail FIFO of --queue packets (default 100).

Each flow is a BulkSend application (unlimited data) to a PacketSink.  The
script prints one JSON object on stdout.  Needs `pip install ns3==3.44.post0`.
"""

import argparse
import json
import sys
import time

# ns-3 congestion-control names accepted on the command line -> ns-3 TypeIds.
CC_TYPES = {
    "newreno": "ns3::TcpNewReno",
    "highspeed": "ns3::TcpHighSpeed",
    "bic": "ns3::TcpBic",
    "scalable": "ns3::TcpScalable",
    "cubic": "ns3::TcpCubic",
    "htcp": "ns3::TcpHtcp",
    "illinois": "ns3::TcpIllinois",
    "yeah": "ns3::TcpYeah",
    "bbr": "ns3::TcpBbr",
    "vegas": "ns3::TcpVegas",
}

# Bytes of IP + TCP header on a data segment when TCP options are off
# (20 IP + 20 TCP); with --timestamps a further 12 bytes are added.
BASE_HEADER_BYTES = 40
TIMESTAMP_OPTION_BYTES = 12

# Socket buffers.  A 200 Mbit/s x 200 ms path needs 5 MB in flight per flow,
# plus the queue, plus slow-start overshoot (up to about twice that before
# the first loss is detected).  32 MiB per flow keeps every window from ever
# being capped by a buffer.
SOCKET_BUFFER_BYTES = 32 * 1024 * 1024


# --qdisc: the ns-3 queue disc at the bottleneck's input.
QDISC_TYPES = {
    "none": None,
    "codel": "ns3::CoDelQueueDisc",
    "pie": "ns3::PieQueueDisc",
    "fq-codel": "ns3::FqCoDelQueueDisc",
}

# Samples the bottleneck queue disc's bytes every period (C++, so that the simulator calls it).
QUEUE_SAMPLER = """
#include <vector>
namespace qstp_qdisc {
std::vector<double> bytes;
double start = 0;
void Sample(ns3::Ptr<ns3::QueueDisc> q, double period) {
    if (ns3::Simulator::Now().GetSeconds() >= start) bytes.push_back(q->GetNBytes());
    ns3::Simulator::Schedule(ns3::Seconds(period), &Sample, q, period);
}
double Mean() {
    double s = 0;
    for (double b : bytes) s += b;
    return bytes.empty() ? 0 : s / bytes.size();
}
}
"""


def parse_rate_bps(text):
    """Parse an ns-3 style data-rate string such as '200Mbps' into bit/s."""
    units = [("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3), ("Kbps", 1e3), ("bps", 1.0)]
    for suffix, scale in units:
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cc", default="newreno", choices=sorted(CC_TYPES),
                   help="congestion control of every flow")
    p.add_argument("--flows", type=int, default=1, help="number of bulk flows")
    p.add_argument("--duration", type=float, default=60.0, help="simulated seconds")
    p.add_argument("--warmup", type=float, default=0.0,
                   help="if > 0, count only bytes received after this many seconds")
    p.add_argument("--bottleneck-rate", default="200Mbps")
    p.add_argument("--bottleneck-delay", default="98ms")
    p.add_argument("--access-rate", default="1Gbps")
    p.add_argument("--access-delay", default="1ms")
    p.add_argument("--queue", type=int, default=100,
                   help="bottleneck drop-tail queue, packets")
    p.add_argument("--qdisc", default="none", choices=sorted(QDISC_TYPES),
                   help="a queue disc at the bottleneck (ns-3's defaults but its size, "
                        "--queue packets): codel, pie, fq-codel; none: the device's drop-tail")
    p.add_argument("--ecn", action="store_true", default=False,
                   help="ECN: TcpSocketBase::UseEcn On and the queue disc's UseEcn true")
    p.add_argument("--access-queue", type=int, default=10000,
                   help="drop-tail queue of the access links, packets (large, so "
                        "that only the bottleneck drops)")
    p.add_argument("--mss", type=int, default=1460, help="TCP payload bytes per segment")
    p.add_argument("--seed", type=int, default=1, help="ns-3 RNG seed")
    p.add_argument("--start-stagger", type=float, default=0.1,
                   help="flow i starts at a uniform random time in [0, this) s, "
                        "drawn from the seed; 0 starts every flow at t=0")
    p.add_argument("--initial-window", type=int, default=10,
                   help="initial cwnd, segments (ns-3 default 10)")
    p.add_argument("--delayed-ack-count", type=int, default=2,
                   help="segments per delayed ACK (ns-3 default 2)")
    p.add_argument("--min-rto", type=float, default=1.0,
                   help="minimum retransmission timeout, s (ns-3 default 1)")
    p.add_argument("--sack", dest="sack", action="store_true", default=True,
                   help="enable SACK (ns-3 default)")
    p.add_argument("--no-sack", dest="sack", action="store_false")
    p.add_argument("--timestamps", dest="timestamps", action="store_true", default=False,
                   help="enable the TCP timestamp option (ns-3 default on, but "
                        "it would make data packets 1512 bytes of IP)")
    p.add_argument("--no-timestamps", dest="timestamps", action="store_false",
                   help="disable TCP timestamps (default here: keeps data packets at "
                        "mss + 40 = 1500 bytes of IP)")
    p.add_argument("--cc-attr", action="append", default=[], metavar="NAME=VALUE",
                   help="set an attribute of the congestion control's TypeId (repeatable), "
                        "e.g. --cc-attr Phy=1 for ns3::TcpYeah::Phy; for diagnosis")
    p.add_argument("--trace", metavar="FILE",
                   help="write every change of every flow's congestion window, slow-start "
                        "threshold, state, RTT and bytes in flight to FILE as CSV "
                        "(time_s,flow,var,value); for diagnosis")
    args = p.parse_args(argv)
    if args.flows < 1:
        p.error("--flows must be >= 1")
    if not 0 <= args.warmup < args.duration:
        p.error("--warmup must be in [0, duration)")
    return args


TRACE_CPP = r"""
#include <cstdio>
#include <string>
namespace qstp_trace {
static FILE* out = nullptr;
static int flow_of(const std::string& ctx) {
    // "/NodeList/<node>/$ns3::TcpL4Protocol/SocketList/<i>/..."; senders are nodes 0..n-1.
    auto a = ctx.find("/NodeList/") + 10;
    return std::stoi(ctx.substr(a, ctx.find('/', a) - a));
}
static void cwnd(std::string ctx, uint32_t, uint32_t v) {
    fprintf(out, "%.6f,%d,cwnd,%u\n", ns3::Simulator::Now().GetSeconds(), flow_of(ctx), v);
}
static void ssthresh(std::string ctx, uint32_t, uint32_t v) {
    fprintf(out, "%.6f,%d,ssthresh,%u\n", ns3::Simulator::Now().GetSeconds(), flow_of(ctx), v);
}
static void state(std::string ctx, ns3::TcpSocketState::TcpCongState_t, ns3::TcpSocketState::TcpCongState_t v) {
    fprintf(out, "%.6f,%d,state,%d\n", ns3::Simulator::Now().GetSeconds(), flow_of(ctx), (int)v);
}
static void inflight(std::string ctx, uint32_t, uint32_t v) {
    fprintf(out, "%.6f,%d,inflight,%u\n", ns3::Simulator::Now().GetSeconds(), flow_of(ctx), v);
}
static void rtt(std::string ctx, ns3::Time, ns3::Time v) {
    fprintf(out, "%.6f,%d,rtt_us,%ld\n", ns3::Simulator::Now().GetSeconds(), flow_of(ctx), (long)v.GetMicroSeconds());
}
static void connect() {
    const std::string s = "/NodeList/*/$ns3::TcpL4Protocol/SocketList/*/";
    ns3::Config::Connect(s + "CongestionWindow", ns3::MakeCallback(&cwnd));
    ns3::Config::Connect(s + "SlowStartThreshold", ns3::MakeCallback(&ssthresh));
    ns3::Config::Connect(s + "CongState", ns3::MakeCallback(&state));
    ns3::Config::Connect(s + "RTT", ns3::MakeCallback(&rtt));
    ns3::Config::Connect(s + "BytesInFlight", ns3::MakeCallback(&inflight));
}
void install(const char* path, double at) {
    out = fopen(path, "w");
    fprintf(out, "time_s,flow,var,value\n");
    ns3::Simulator::Schedule(ns3::Seconds(at), &connect);
}
void close() { if (out) { fclose(out); out = nullptr; } }
}
"""


def install_trace(ns, path, at):
    """Connects the TCP sockets' traces (after the last flow has started) to a CSV writer."""
    import cppyy
    cppyy.cppdef(TRACE_CPP)
    cppyy.gbl.qstp_trace.install(path, at)


def main(argv=None):
    args = parse_args(argv)
    wall_start = time.time()

    from ns import ns  # imported late so that --help works without ns-3

    ns.RngSeedManager.SetSeed(args.seed)  # seeds the start stagger (the only randomness)
    ns.RngSeedManager.SetRun(1)

    # ---- TCP defaults for every socket created below -------------------------
    cfg = ns.Config.SetDefault
    # Congestion control used by every TCP socket.
    cfg("ns3::TcpL4Protocol::SocketType",
        ns.TypeIdValue(ns.TypeId.LookupByName(CC_TYPES[args.cc])))
    # Attributes of the control itself (--cc-attr), given as strings.
    for attr in args.cc_attr:
        name, value = attr.split("=", 1)
        cfg(f"{CC_TYPES[args.cc]}::{name}", ns.StringValue(value))
    # BBR paces its segments (ns-3's TcpBbr asks for pacing; Linux's bbr has it from the stack).
    if args.cc == "bbr":
        cfg("ns3::TcpSocketState::EnablePacing", ns.BooleanValue(True))
    # Payload bytes per segment (1460 -> 1500-byte IP packets without options).
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(args.mss))
    # Initial congestion window in segments.
    cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(args.initial_window))
    # Number of in-order segments the receiver waits for before ACKing.
    cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(args.delayed_ack_count))
    # Floor of the retransmission timeout.
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(args.min_rto)))
    # Selective acknowledgements.
    cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(args.sack))
    # ECN (RFC 3168) on every socket, with --ecn.
    if args.ecn:
        cfg("ns3::TcpSocketBase::UseEcn", ns.StringValue("On"))
    # Timestamp option (12 bytes on every segment when on).
    cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(args.timestamps))
    # Send buffer large enough never to cap the window (see SOCKET_BUFFER_BYTES).
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(SOCKET_BUFFER_BYTES))
    # Receive buffer (advertised window) large enough never to cap the window.
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(SOCKET_BUFFER_BYTES))

    # ---- Nodes ---------------------------------------------------------------
    n = args.flows
    senders = ns.NodeContainer()
    senders.Create(n)
    receivers = ns.NodeContainer()
    receivers.Create(n)
    routers = ns.NodeContainer()
    routers.Create(2)
    left, right = routers.Get(0), routers.Get(1)

    internet = ns.InternetStackHelper()
    internet.Install(senders)
    internet.Install(receivers)
    internet.Install(routers)

    # ---- Links ---------------------------------------------------------------
    # Queueing: every point-to-point device keeps its own DropTailQueue<Packet>,
    # and the traffic-control layer's default FqCoDel root queue disc (which
    # Ipv4AddressHelper::Assign installs) is REMOVED from every device below,
    # so packets go straight into the device's drop-tail queue.  The bottleneck
    # queue is therefore exactly --queue packets of FIFO drop-tail (plus the one
    # packet being serialised).
    bottleneck = ns.PointToPointHelper()
    # Bottleneck serialisation rate (applies to the whole 1502-byte PPP frame).
    bottleneck.SetDeviceAttribute("DataRate", ns.StringValue(args.bottleneck_rate))
    # Bottleneck one-way propagation delay.
    bottleneck.SetChannelAttribute("Delay", ns.StringValue(args.bottleneck_delay))
    # Drop-tail queue size of the bottleneck devices, in packets (1 under a --qdisc, whose own
    # size is --queue).
    device_queue = args.queue if args.qdisc == "none" else 1
    ns.Config.SetDefault("ns3::DropTailQueue<Packet>::MaxSize",
                         ns.QueueSizeValue(ns.QueueSize(f"{device_queue}p")))
    core_devs = bottleneck.Install(left, right)

    access = ns.PointToPointHelper()
    # Access link rate (faster than the bottleneck, so never the constraint).
    access.SetDeviceAttribute("DataRate", ns.StringValue(args.access_rate))
    # Access link one-way propagation delay.
    access.SetChannelAttribute("Delay", ns.StringValue(args.access_delay))
    # Access queues big enough that the bottleneck is the only place that drops.
    ns.Config.SetDefault("ns3::DropTailQueue<Packet>::MaxSize",
                         ns.QueueSizeValue(ns.QueueSize(f"{args.access_queue}p")))
    send_devs, recv_devs = [], []
    for i in range(n):
        send_devs.append(access.Install(senders.Get(i), left))
        recv_devs.append(access.Install(right, receivers.Get(i)))

    # ---- Addresses and routes --------------------------------------------------
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.0"))
    addr.Assign(core_devs)
    receiver_addrs = []
    for i in range(n):
        addr.SetBase(ns.Ipv4Address(f"10.1.{i}.0"), ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(send_devs[i])
        addr.SetBase(ns.Ipv4Address(f"10.2.{i}.0"), ns.Ipv4Mask("255.255.255.0"))
        ifaces = addr.Assign(recv_devs[i])
        receiver_addrs.append(ifaces.GetAddress(1))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    # Remove the default FqCoDel root queue discs (see the comment above).
    tch = ns.TrafficControlHelper()
    tch.Uninstall(core_devs)
    for i in range(n):
        tch.Uninstall(send_devs[i])
        tch.Uninstall(recv_devs[i])
    qdisc = None
    if QDISC_TYPES[args.qdisc]:
        # --qdisc: that queue disc, of --queue packets, at the bottleneck's input (L's device);
        # the device's own queue is then 1 packet (set below), so the queue forms in the disc.
        aqm = ns.TrafficControlHelper()
        aqm.SetRootQueueDisc(QDISC_TYPES[args.qdisc], "MaxSize",
                             ns.QueueSizeValue(ns.QueueSize(f"{args.queue}p")))
        if args.ecn:
            cfg(f"{QDISC_TYPES[args.qdisc]}::UseEcn", ns.BooleanValue(True))
        discs = aqm.Install(core_devs.Get(0))
        qdisc = discs.Get(0)
        import cppyy
        cppyy.cppdef(QUEUE_SAMPLER)
        cppyy.gbl.qstp_qdisc.start = args.warmup
        cppyy.gbl.qstp_qdisc.Sample(qdisc, 0.01)

    # ---- Applications ----------------------------------------------------------
    port = 5000
    stagger = ns.CreateObject[ns.UniformRandomVariable]()
    stagger.SetAttribute("Min", ns.DoubleValue(0.0))
    stagger.SetAttribute("Max", ns.DoubleValue(args.start_stagger))
    sinks, starts = [], []
    for i in range(n):
        sink_helper = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sink_apps = sink_helper.Install(receivers.Get(i))
        sink_apps.Start(ns.Seconds(0.0))
        sinks.append(sink_apps.Get(0))

        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(receiver_addrs[i], port).ConvertTo())
        # Unlimited data: the flow is backlogged for the whole run.
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        # Hand the socket one segment's worth per write (default is 512 bytes).
        bulk.SetAttribute("SendSize", ns.UintegerValue(args.mss))
        start = stagger.GetValue() if args.start_stagger > 0 else 0.0
        starts.append(start)
        apps = bulk.Install(senders.Get(i))
        apps.Start(ns.Seconds(start))

    if args.trace:
        install_trace(ns, args.trace, max(starts) + 0.001)

    def rx_bytes():
        # PacketSink counts application payload bytes only.
        return [ns.DynamicCast[ns.PacketSink](s).GetTotalRx() for s in sinks]

    # ---- Run ---------------------------------------------------------------------
    if args.warmup > 0:
        ns.Simulator.Stop(ns.Seconds(args.warmup))
        ns.Simulator.Run()
        base = rx_bytes()
    else:
        base = [0] * n
    # Simulator::Stop takes a delay from now: the rest of the run after the warm-up.
    ns.Simulator.Stop(ns.Seconds(args.duration - max(args.warmup, 0.0)))
    ns.Simulator.Run()
    final = rx_bytes()
    ns.Simulator.Destroy()
    if args.trace:
        import cppyy
        cppyy.gbl.qstp_trace.close()

    # ---- Results -----------------------------------------------------------------
    window = args.duration - args.warmup
    rate_bps = parse_rate_bps(args.bottleneck_rate)
    ip_packet_bytes = args.mss + BASE_HEADER_BYTES + (
        TIMESTAMP_OPTION_BYTES if args.timestamps else 0)
    per_flow_bps = [(f - b) * 8.0 / window for f, b in zip(final, base)]
    total = sum(per_flow_bps)
    # utilisation: payload goodput (bytes delivered to the sinks) / bottleneck rate.
    utilisation = total / rate_bps
    # utilisation_ip: the same data counted as whole IP packets (mss + headers).
    utilisation_ip = total * ip_packet_bytes / args.mss / rate_bps
    sq = sum(x * x for x in per_flow_bps)
    jain = total * total / (n * sq) if sq > 0 else 0.0

    queue_delay_ms = None
    if qdisc is not None:
        import cppyy
        # Mean bytes in the disc (10 ms samples after the warm-up) over the bottleneck rate.
        queue_delay_ms = cppyy.gbl.qstp_qdisc.Mean() * 8.0 / rate_bps * 1e3
    out = {
        "simulator": "ns-3.44",
        "qdisc": args.qdisc,
        "ecn": args.ecn,
        "queue_delay_ms": queue_delay_ms,
        "cc": args.cc,
        "flows": n,
        "duration_s": args.duration,
        "settings": {
            "ns3_type": CC_TYPES[args.cc],
            "bottleneck_rate": args.bottleneck_rate,
            "bottleneck_delay": args.bottleneck_delay,
            "access_rate": args.access_rate,
            "access_delay": args.access_delay,
            "queue_packets": args.queue,
            "queue_discipline": ("device DropTailQueue, no queue disc" if qdisc is None else
                                 f"{QDISC_TYPES[args.qdisc]} (ns-3 defaults), device queue 1p"),
            "access_queue_packets": args.access_queue,
            "mss_bytes": args.mss,
            "ip_packet_bytes": ip_packet_bytes,
            "seed": args.seed,
            "start_stagger_max_s": args.start_stagger,
            "start_times_s": starts,
            "warmup_s": args.warmup,
            "initial_window_segments": args.initial_window,
            "delayed_ack_count": args.delayed_ack_count,
            "min_rto_s": args.min_rto,
            "sack": args.sack,
            "timestamps": args.timestamps,
            "window_scaling": True,
            "socket_buffer_bytes": SOCKET_BUFFER_BYTES,
            "recovery": "ns-3 default (TcpPrrRecovery)",
            "cc_attributes": args.cc_attr,
        },
        "per_flow_bps": per_flow_bps,
        "per_flow_bytes": [f - b for f, b in zip(final, base)],
        "utilisation": utilisation,
        "utilisation_ip": utilisation_ip,
        "jain": jain,
        "wall_clock_s": round(time.time() - wall_start, 1),
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
