# The QSTP paper's Fig. 7 (§5.4) in ns-2.35: one studied flow (TCP, or ns-2's TFRC standing in for
# QSTP) in a 300 kbit/s class of a class-based queueing (CBQ) bottleneck, against a UDP CBR flow
# in a 700 kbit/s class that sends 300 kbit/s, 1000 kbit/s from 60 s to 120 s, then 300 kbit/s
# again. The same network as scenarios/qstp-fig7.toml.
#
#   ns qstp_cbq.tcl DURATION_S WARMUP_S SEED PROTO
#
# PROTO is tcp or tfrc. Prints one JSON object: per flow (the studied flow, then the UDP flow) its
# throughput at the bottleneck's output over [WARMUP, DURATION] and over each phase of the UDP
# flow's schedule ([WARMUP, 60], [60, 120], [120, DURATION]), its drops at the bottleneck, and the
# flows' start times.
#
# For diagnosis only, environment variables change the run: CBQ_ALGORITHM picks ns-2's
# link-sharing rule (ancestor-only, top-level or formal; below), TFRC_CA=0 turns off TFRC's ca_.

# compare.py (cbq_rows.py) gives 180 5 SEED PROTO: §5.1's 180 s runs, 10 of them (seeds 1-10);
# Choice (paper silent, as qstp-fig7.toml): the first 5 s are left out of the means.
set duration [lindex $argv 0]
set warmup   [lindex $argv 1]
set seed     [lindex $argv 2]
set proto    [lindex $argv 3]
global env

set ns [new Simulator]
# Seed N: the N-th substream of ns-2's default RNG and of the start times' RNG. The start times
# are the run's only randomness (CBR without jitter, TCP, TFRC and CBQ are deterministic).
for {set k 1} {$k < $seed} {incr k} { $defaultRNG next-substream }
set startrng [new RNG]
for {set k 1} {$k < $seed} {incr k} { $startrng next-substream }

# §5.1 (the topology of Fig. 3 is kept, §5.4): a 1000 kbit/s bottleneck between the core and the
# egress router.
set bneck_rate 1000kb
# §5.1: 1500-byte packets, for every flow.
set pktsize 1500
# §5.1: 50-packet queues. Choice (paper silent, as qstp-fig7.toml): each CBQ class has its own
# 50-packet drop-tail FIFO.
set qlimit 50
# §5.2, §5.3: every flow's RTT is 30 ms; the paper is silent for Fig. 7, qstp-fig7.toml keeps it.
set rtt 0.03
# §5.4: a guaranteed pipe of 300 kbit/s for the studied flow. Choice (paper silent, as
# qstp-fig7.toml): the UDP flow's class gets the remaining 700 kbit/s ("the CBQ algorithm starts
# when the UDP flow sends above 700 Kbit/s", §5.4). As fractions of the link (CBQ's allotments).
set pipe_allot 0.3
set udp_allot 0.7
# §5.4: the UDP flow emits 300 kbit/s, 1000 kbit/s within [60, 120] s, then 300 kbit/s.
set schedule {{0 300000} {60 1000000} {120 300000}}
# Choice (paper silent, as the lab's dumbbell): the other links run at 100 Mbit/s (ten times the
# bottleneck, at least 100 Mbit/s) with no propagation delay but each flow's own access link,
# which carries the whole base RTT (half each way), and 1000-packet queues; only the bottleneck's
# queue ever fills.
set fast 100Mb

# ns-2's CBQ (queue/cbq.cc). Choice (paper silent; the lab's `cbq` queue): formal link-sharing
# (Floyd & Jacobson 1995, the CBQ of the paper's reference [23]): a class over its allotment
# may borrow only while no class under its allotment has packets waiting, the lab's rule
# (under-rate classes first, borrowing classes share what is left). ns-2's default,
# ancestor-only (Queue/CBQ algorithm_ 0, ns-default.tcl:267), lets a class borrow whenever the
# root is under its allotment, which a root allotted the whole link always is: every class could
# always send and CBQ would be plain round robin.
set algorithm formal
if {[info exists env(CBQ_ALGORITHM)]} { set algorithm $env(CBQ_ALGORITHM) }
# Choice (the lab's `cbq` queue serves the classes it lets send round robin, packet by packet):
# the `CBQ` link type, ns-2's packet-by-packet round robin (PRR), not weighted round robin
# (CBQ/WRR).
set linktype CBQ
# ns-2's largest packet for CBQ (Queue/CBQ maxpkt_, 1024 by default, ns-default.tcl:268), from
# which `auto` maxidle is computed: the 1500-byte packets of §5.1.
Queue/CBQ set maxpkt_ $pktsize

set C [$ns node]
set X [$ns node]
$ns simplex-link $C $X $bneck_rate 0ms $linktype
$ns simplex-link $X $C $fast 0ms DropTail
$ns queue-limit $X $C 1000
set cbqlink [$ns link $C $X]

# The link-sharing tree: a root class for the whole link and one leaf class per flow.
# setparams: parent, okborrow, allot, maxidle, priority, level, extradelay.
# Root: no parent, so nothing to borrow from; allotment 1.0, the whole link (the lab's classes
# share the link's rate); maxidle auto (ns-2's rule, ns-queue.tcl automaxidle); priority and level
# as ns-2's test suite's roots (an interior class has no queue and is not scheduled); no extra
# delay.
set root [new CBQClass]
$root setparams none false 1.0 auto 8 2 0
# Leaves: parent the root; okborrow true (§5.4, "borrow mode", both classes borrow, as
# qstp-fig7.toml's `borrow = true`); allotments above; maxidle auto: Choice (paper silent; the lab
# has no such parameter): ns-2's own rule (ns-queue.tcl automaxidle), which lets a class that has
# been idle send about 8 packets back to back before it is regulated, where a lab class carries
# at most 3000 bytes of credit (cbq.rs CLASS_BURST_BYTES, two packets above its rate); priority 1
# for both (the lab has no priorities, one round robin); level 1 (leaves); extradelay 0 (ns-2's
# default; the lab has none).
set pipe [new CBQClass]
$pipe setparams $root true $pipe_allot auto 1 1 0
set udpcl [new CBQClass]
$udpcl setparams $root true $udp_allot auto 1 1 0
foreach cl [list $pipe $udpcl] {
    set q [new Queue/DropTail]
    $q set limit_ $qlimit
    $cl install-queue $q
}
$cbqlink insert $root
$cbqlink insert $pipe
$cbqlink insert $udpcl
# Choice (paper silent, as qstp-fig7.toml, whose classes list groups): classes by flow id, no edge
# marker.
$cbqlink bind $pipe 1
$cbqlink bind $udpcl 2
[$cbqlink queue] algorithm $algorithm

# Per-flow bytes at the bottleneck's output (nothing is lost after it) and drops at it.
set fmon [$ns makeflowmon Fid]
$ns attach-fmon $cbqlink $fmon

# The studied flow (host A to host B; flow id 1, the 300k class).
set A [$ns node]
set B [$ns node]
$ns duplex-link $A $C $fast [expr {$rtt / 2.0}]s DropTail
$ns duplex-link $X $B $fast 0ms DropTail
foreach {a b} [list $A $C $C $A $X $B $B $X] { $ns queue-limit $a $b 1000 }
if {$proto == "tfrc"} {
    # ns-2's TFRC sender and receiver stand in for QSTP (gTFRC + SACK, which ns-2.35 does not
    # have), as for the QSTP rows of Figs. 4 and 5 (gtfrc_af.tcl); ns-2's defaults otherwise
    # (ns-default.tcl). Its packetSize_ is the whole packet.
    set src [new Agent/TFRC]
    set snk [new Agent/TFRCSink]
    $src set packetSize_ $pktsize
    # ns-2's ca_ 1 (ns-default.tcl:1174): RFC 5348 §4.5's oscillation prevention (the
    # inter-packet interval scaled by sqrt(R_sample) / R_sqmean), which the lab's TFRC does not
    # implement. For diagnosis only, TFRC_CA=0 in the environment turns it off.
    if {[info exists env(TFRC_CA)]} { $src set ca_ $env(TFRC_CA) }
    set app [new Application/FTP]
    $app attach-agent $src
} elseif {$proto == "tcp"} {
    # Choice (paper silent), the lab's default TCP, which qstp-fig7.toml's `tcp` point keeps
    # (docs/scenarios.md): NewReno with SACK, no delayed ACKs, initial window 2, minimum RTO
    # 200 ms, unlimited window. In ns-2: Agent/TCP/Sack1 and Agent/TCPSink/Sack1 (which ACKs
    # every segment); windowInit_ 2 and minrto_ 0.2 are ns-2.35's defaults (ns-default.tcl:920,
    # :956); window_ (the receiver's window, 20 by default) is set so large it never binds.
    # ns-2's Limited Transmit (singledup_ 1, ns-default.tcl:987), which the lab's TCP does not
    # have, stays on, as in the other scripts (README.md, "Not traced").
    set src [new Agent/TCP/Sack1]
    set snk [new Agent/TCPSink/Sack1]
    # §5.1: 1500-byte packets: a 1460-byte payload, ns-2 adds 40 bytes of headers.
    $src set packetSize_ [expr {$pktsize - 40}]
    $src set window_ 1000
    set app [new Application/FTP]
    $app attach-agent $src
} else {
    puts stderr "PROTO must be tcp or tfrc, not $proto"
    exit 1
}
$src set fid_ 1
$ns attach-agent $A $src
$ns attach-agent $B $snk
$ns connect $src $snk

# The UDP flow (host C' to host D'; flow id 2, the 700k class): §5.4's CBR source.
set U [$ns node]
set V [$ns node]
$ns duplex-link $U $C $fast [expr {$rtt / 2.0}]s DropTail
$ns duplex-link $X $V $fast 0ms DropTail
foreach {a b} [list $U $C $C $U $X $V $V $X] { $ns queue-limit $a $b 1000 }
set udp [new Agent/UDP]
set null [new Agent/Null]
# §5.1: 1500-byte packets; ns-2's UDP agent adds no header to the application's packets, so both
# sizes are the packet on the wire.
$udp set packetSize_ $pktsize
$udp set fid_ 2
$ns attach-agent $U $udp
$ns attach-agent $V $null
$ns connect $udp $null
set cbr [new Application/Traffic/CBR]
$cbr attach-agent $udp
$cbr set packetSize_ $pktsize
# Choice (paper silent, as the lab's `cbr`): constant intervals, no jitter (random_ 0, ns-2's
# default).
$cbr set random_ 0
$cbr set rate_ [lindex $schedule 0 1]

# Choice (paper silent), the lab's: each flow starts at a uniform time in [0, its RTT) (a
# group's `start_spread` defaults to its `rtt`), drawn from the seed's substream: the studied
# flow's, then the UDP flow's. The draws are not the lab's, only their distribution.
set starts {}
set t0 [$startrng uniform 0 $rtt]
$ns at $t0 "$app start"
lappend starts [format %.6f $t0]
set t0 [$startrng uniform 0 $rtt]
$ns at $t0 "$cbr start"
lappend starts [format %.6f $t0]
# A step of the schedule takes effect at its time, as the lab's source, which sends its first
# packet at the new rate then: CBR_Traffic's start sends at once (tools/cbr_traffic.cc), where
# setting rate_ alone would wait for the interval already scheduled at the old rate.
foreach step [lrange $schedule 1 end] {
    lassign $step t r
    if {$t < $duration} { $ns at $t "$cbr stop; $cbr set rate_ $r; $cbr start" }
}

# Snapshots of each flow's departed bytes at the phase boundaries: the warm-up's end, every step
# of the schedule after it, and the run's end.
set bounds [list $warmup]
foreach step [lrange $schedule 1 end] {
    set t [lindex $step 0]
    if {$t > $warmup && $t < $duration} { lappend bounds $t }
}
lappend bounds $duration
proc flow_of {fid} {
    global fmon
    return [[$fmon classifier] lookup auto 0 0 $fid]
}
proc bytes_of {fid} {
    set flow [flow_of $fid]
    if {$flow == ""} { return 0 }
    return [$flow set bdepartures_]
}
proc drops_of {fid} {
    set flow [flow_of $fid]
    if {$flow == ""} { return 0 }
    return [$flow set pdrops_]
}
proc snapshot {k} {
    global at
    foreach fid {1 2} { set at($k,$fid) [bytes_of $fid] }
}
for {set k 0} {$k < [llength $bounds] - 1} {incr k} {
    set t [lindex $bounds $k]
    if {$t > 0} { $ns at $t "snapshot $k" } else { snapshot $k }
}

# For diagnosis only, RATE_SAMPLES=1 in the environment records, every second from 115 s to
# 145 s, the TFRC sender's rate_ (bit/s; before ca_'s scaling), the packets in the studied
# flow's class queue and the flow's bytes through the bottleneck so far, into the JSON.
set samples {}
proc sample_rate {} {
    global ns src samples pipe
    lappend samples [format "\[%.0f, %.0f, %d, %.0f\]" [$ns now] \
        [expr {[$src set rate_] * 8.0}] [[$pipe qmon] set pkts_] [bytes_of 1]]
    if {[$ns now] < 145} { $ns at [expr {[$ns now] + 1}] "sample_rate" }
}
if {[info exists env(RATE_SAMPLES)] && $proto == "tfrc"} { $ns at 115 "sample_rate" }

proc finish {} {
    global bounds at duration warmup seed proto algorithm starts src samples
    set last [expr {[llength $bounds] - 1}]
    snapshot $last
    set out {}
    foreach fid {1 2} name {AB UDP} kind [list $proto cbr] {
        set phases {}
        for {set k 0} {$k < $last} {incr k} {
            set span [expr {[lindex $bounds [expr {$k + 1}]] - [lindex $bounds $k]}]
            set bytes [expr {$at([expr {$k + 1}],$fid) - $at($k,$fid)}]
            lappend phases [format %.1f [expr {$bytes * 8.0 / $span}]]
        }
        set bps [expr {($at($last,$fid) - $at(0,$fid)) * 8.0 / ($duration - $warmup)}]
        # TCP's own counters over the whole run: timeouts (nrexmit_), packets resent
        # (nrexmitpack_) and sent (ndatapack_).
        set extra ""
        if {$kind == "tcp"} {
            set extra [format ", \"timeouts\": %d, \"retransmitted_packets\": %d, \"packets_sent\": %d" \
                [$src set nrexmit_] [$src set nrexmitpack_] [$src set ndatapack_]]
        }
        lappend out [format "{\"name\": \"%s\", \"protocol\": \"%s\", \"throughput_bps\": %.1f, \"phase_throughput_bps\": \[%s\], \"drops\": %d%s}" \
            $name $kind $bps [join $phases ", "] [drops_of $fid] $extra]
    }
    set spans {}
    for {set k 0} {$k < $last} {incr k} {
        lappend spans "\[[lindex $bounds $k], [lindex $bounds [expr {$k + 1}]]\]"
    }
    puts [format "{\"simulator\": \"ns-2.35\", \"duration_s\": %s, \"warmup_s\": %s, \"seed\": %d, \"protocol\": \"%s\", \"cbq_algorithm\": \"%s\", \"phases_s\": \[%s\], \"flows\": \[%s\], \"start_times_s\": \[%s\], \"rate_samples\": \[%s\]}" \
        $duration $warmup $seed $proto $algorithm [join $spans ", "] [join $out ", "] [join $starts ", "] \
        [join $samples ", "]]
    exit 0
}
$ns at $duration "finish"
$ns run
