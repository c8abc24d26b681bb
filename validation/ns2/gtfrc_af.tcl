# The gTFRC paper's AF network (§4.1, Fig. 2) in ns-2.35 with Nortel's
# DiffServ module (Queue/dsRED/edge and Queue/dsRED/core) and ns-2's TFRC and TCP agents, the same
# network as scenarios/gtfrc-*.toml.
#
#   ns gtfrc_af.tcl DURATION_S WARMUP_S SEED TCP_WINDOW TCP_PKTSIZE FLOW [FLOW ...]
#
# FLOW is PROTO:TARGET_BPS:RTT_S[:N], a group of N flows (default 1) with PROTO tfrc or tcp from one
# source host to one destination host, whose aggregate one token bucket marks at TARGET_BPS. TCP_WINDOW is ns-2's window_ (packets) and
# TCP_PKTSIZE its packetSize_ (payload bytes; ns-2 adds a 40-byte header): 1000 1460 are the
# paper's 1500-byte packets with a window that never binds, as the lab; 20 1000 are ns-2's own
# defaults (tcp-defaults: window_ 20, packetSize_ 1000). Prints one JSON object: each flow's
# throughput at the bottleneck's output over [WARMUP, DURATION], and the core queue's packets,
# ldrops and edrops per code point (10 in-profile, 11 out-profile) over the whole run, as the
# paper's Tables 1-3. "flows" lists the groups, each with its aggregate throughput.

set duration [lindex $argv 0]
set warmup   [lindex $argv 1]
set seed     [lindex $argv 2]
set tcpwin   [lindex $argv 3]
set tcpsize  [lindex $argv 4]
set flows    [lrange $argv 5 end]
global env

set ns [new Simulator]
# Seed N: the N-th substream of ns-2's default RNG (RED's drops draw from it) and of the start
# times' RNG.
for {set k 1} {$k < $seed} {incr k} { $defaultRNG next-substream }
set startrng [new RNG]
for {set k 1} {$k < $seed} {incr k} { $startrng next-substream }
set starts {}

# §4.1: a 1000 kbit/s bottleneck between the core and the egress router.
set bneck_rate 1000kb
# §4.1: 50-packet queues; RIO (min_out, max_out, p_out, min_in, max_in, p_in) =
# (10, 20, 0.1, 20, 40, 0.02). Nortel's module: RIO-C (its default, dsredq.cc:48), EWMA weight
# 0.002 (its default, dsredq.cc:68), as the lab's `rio` queue (mode rio-c, weight 0.002).
set qlimit 50
# §4.1: 1500-byte packets.
set pktsize 1500
# §4.1: a two-colour token bucket marker with a 10^4-byte bucket. Choice (paper silent, as the
# lab's scenarios): one marker per flow at the flow's target rate.
set cbs 10000
# Choice (paper silent, as the lab's dumbbell): the other links run at 100 Mbit/s (ten times the
# bottleneck, at least 100 Mbit/s) with no propagation delay but each flow's own access link,
# which carries the whole base RTT (half each way); no queue but the bottleneck's ever fills.
set fast 100Mb

set E [$ns node]
set C [$ns node]
set X [$ns node]
$ns simplex-link $E $C $fast 0ms dsRED/edge
$ns simplex-link $C $E $fast 0ms DropTail
$ns simplex-link $C $X $bneck_rate 0ms dsRED/core
$ns simplex-link $X $C $fast 0ms DropTail
$ns queue-limit $E $C 1000
$ns queue-limit $C $E 1000
$ns queue-limit $C $X $qlimit
$ns queue-limit $X $C 1000

set qE [[$ns link $E $C] queue]
set qC [[$ns link $C $X] queue]
foreach q [list $qE $qC] {
    $q meanPktSize $pktsize
    $q set numQueues_ 1
    $q setNumPrec 2
    $q addPHBEntry 10 0 0
    $q addPHBEntry 11 0 1
    $q configQ 0 0 20 40 0.02
    $q configQ 0 1 10 20 0.10
    $q setMREDMode RIO-C
}
$qE addPolicerEntry TokenBucket 10 11

# Per-flow throughput at the bottleneck's output (nothing is lost after it).
set fmon [$ns makeflowmon Fid]
$ns attach-fmon [$ns link $C $X] $fmon

set i 0
set g 0
foreach f $flows {
    lassign [split $f :] proto target rtt n
    if {$n == ""} { set n 1 }
    set s($g) [$ns node]
    set d($g) [$ns node]
    $ns duplex-link $s($g) $E $fast [expr {$rtt / 2.0}]s DropTail
    $ns duplex-link $X $d($g) $fast 0ms DropTail
    $ns queue-limit $s($g) $E 1000
    $ns queue-limit $E $s($g) 1000
    $qE addPolicyEntry [$s($g) id] [$d($g) id] TokenBucket 10 $target $cbs
    set kind($g) $proto
    set tgt($g) $target
    set rt($g) $rtt
    set members($g) {}
    for {set k 0} {$k < $n} {incr k} {
        if {$proto == "tfrc"} {
            # ns-2's TFRC sender and receiver (tcl/lib/ns-default.tcl defaults otherwise); its
            # packetSize_ is the whole packet.
            set src($i) [new Agent/TFRC]
            set snk($i) [new Agent/TFRCSink]
            $src($i) set packetSize_ $pktsize
            # ns-2's ca_ 1 (ns-default.tcl): RFC 5348 §4.5's oscillation prevention (the
            # inter-packet interval scaled by sqrt(R_sample) / R_sqmean), which the lab's TFRC
            # does not implement. For diagnosis only, TFRC_CA=0 in the environment turns it off.
            if {[info exists env(TFRC_CA)]} { $src($i) set ca_ $env(TFRC_CA) }
        } else {
            # §4.1: TCP NewReno; ns-2's sink ACKs every packet (no delayed ACKs, as the lab).
            set src($i) [new Agent/TCP/Newreno]
            set snk($i) [new Agent/TCPSink]
            $src($i) set packetSize_ $tcpsize
            $src($i) set window_ $tcpwin
        }
        $src($i) set fid_ $i
        $ns attach-agent $s($g) $src($i)
        $ns attach-agent $d($g) $snk($i)
        $ns connect $src($i) $snk($i)
        set app($i) [new Application/FTP]
        $app($i) attach-agent $src($i)
        # Choice (paper silent), the lab's: each flow starts at a uniform time in [0, its group's
        # RTT) (a group's `start_spread` defaults to its `rtt`), drawn from the seed's substream.
        # The draws are not the lab's, only their distribution. For diagnosis only, START_<group>
        # in the environment starts a group's flows at that time instead.
        if {[info exists env(START_$g)]} {
            set t0 $env(START_$g)
        } else {
            set t0 [$startrng uniform 0 $rtt]
        }
        $ns at $t0 "$app($i) start"
        lappend starts [format %.6f $t0]
        lappend members($g) $i
        incr i
    }
    incr g
}
set ngroups $g
set nflows $i

# For diagnosis only, RATE_SAMPLES=1 in the environment records the first flow's sending rate
# (TFRC's rate_, bytes/s) every 5 s into the JSON.
set samples {}
proc sample_rate {} {
    global ns src samples
    lappend samples [format "\[%.0f, %.0f\]" [$ns now] [expr {[$src(0) set rate_] * 8.0}]]
    $ns at [expr {[$ns now] + 5}] "sample_rate"
}
if {[info exists env(RATE_SAMPLES)]} { $ns at 5 "sample_rate" }
# For diagnosis only, EARLY_SAMPLES=1 records the first two flows' sending rates every 0.25 s
# up to 5 s.
set early {}
proc sample_early {} {
    global ns src early
    lappend early [format "\[%.2f, %.0f, %.0f\]" [$ns now] [expr {[$src(0) set rate_] * 8.0}] \
        [expr {[$src(1) set rate_] * 8.0}]]
    if {[$ns now] < 5} { $ns at [expr {[$ns now] + 0.25}] "sample_early" }
}
if {[info exists env(EARLY_SAMPLES)]} { $ns at 0.25 "sample_early" }
# For diagnosis only, QUEUE_SAMPLES=1 records every 5 s the core queue's RIO-C averages (of the
# in-profile packets, and of all packets, which the out-of-profile curve uses) and its
# out-of-profile arrivals and early drops so far.
set qsamples {}
proc sample_queue {} {
    global ns qC qsamples
    lappend qsamples [format "\[%.0f, %.2f, %.2f, %.0f, %.0f\]" [$ns now] [$qC getAverageV 0 0] \
        [$qC getAverageV 0 1] [$qC getStat pkts 11] [$qC getStat edrops 11]]
    $ns at [expr {[$ns now] + 5}] "sample_queue"
}
if {[info exists env(QUEUE_SAMPLES)]} { $ns at 5 "sample_queue" }

proc bytes_of {i} {
    global fmon
    set cl [$fmon classifier]
    set flow [$cl lookup auto 0 0 $i]
    if {$flow == ""} { return 0 }
    return [$flow set bdepartures_]
}
proc mark_warmup {} {
    global nflows at_warmup
    for {set i 0} {$i < $nflows} {incr i} { set at_warmup($i) [bytes_of $i] }
}
for {set i 0} {$i < $nflows} {incr i} { set at_warmup($i) 0 }
if {$warmup > 0} { $ns at $warmup "mark_warmup" }
# The core queue's counters when the measurement starts, so that its packets and drops are
# counted over the measured window as the lab counts them (getStat counts from 0 s, and the
# flows' start-up overflow falls in the warm-up).
foreach cp {10 11} { foreach st {pkts drops edrops} { set q_at_warmup($cp,$st) 0 } }
proc mark_queue_warmup {} {
    global qC q_at_warmup
    foreach cp {10 11} {
        foreach st {pkts drops edrops} { set q_at_warmup($cp,$st) [$qC getStat $st $cp] }
    }
}
if {$warmup > 0} { $ns at $warmup "mark_queue_warmup" }

proc finish {} {
    global ngroups members duration warmup kind tgt rt qC seed tcpwin tcpsize at_warmup src samples starts early q_at_warmup qsamples
    set out {}
    for {set g 0} {$g < $ngroups} {incr g} {
        set bytes 0
        foreach i $members($g) { set bytes [expr {$bytes + [bytes_of $i] - $at_warmup($i)}] }
        set bps [expr {$bytes * 8.0 / ($duration - $warmup)}]
        # TCP's own counters over the whole run: timeouts (nrexmit_), packets resent
        # (nrexmitpack_) and sent (ndatapack_).
        set rto 0; set rtx 0; set sent 0
        if {$kind($g) == "tcp"} {
            foreach i $members($g) {
                incr rto [$src($i) set nrexmit_]
                incr rtx [$src($i) set nrexmitpack_]
                incr sent [$src($i) set ndatapack_]
            }
        }
        lappend out [format "{\"protocol\": \"%s\", \"flows\": %d, \"target_bps\": %s, \"rtt_s\": %s, \"throughput_bps\": %.1f, \"timeouts\": %d, \"retransmitted_packets\": %d, \"packets_sent\": %d}" $kind($g) [llength $members($g)] $tgt($g) $rt($g) $bps $rto $rtx $sent]
    }
    set cps {}
    set cpm {}
    foreach cp {10 11} {
        set pk [$qC getStat pkts $cp]
        set dr [$qC getStat drops $cp]
        set ed [$qC getStat edrops $cp]
        # getStat drops is the link (overflow) drops alone: dsred.cc:198-204 counts edrops apart.
        lappend cps [format "\"%d\": {\"packets\": %.0f, \"ldrops\": %.0f, \"edrops\": %.0f}" $cp $pk $dr $ed]
        # The same over the measured window (from the warm-up's end), as the lab's summary.
        lappend cpm [format "\"%d\": {\"packets\": %.0f, \"ldrops\": %.0f, \"edrops\": %.0f}" $cp \
            [expr {$pk - $q_at_warmup($cp,pkts)}] [expr {$dr - $q_at_warmup($cp,drops)}] \
            [expr {$ed - $q_at_warmup($cp,edrops)}]]
    }
    puts [format "{\"simulator\": \"ns-2.35\", \"duration_s\": %s, \"warmup_s\": %s, \"seed\": %d, \"tcp_window\": %s, \"tcp_packet_size\": %s, \"flows\": \[%s\], \"core_queue\": {%s}, \"core_queue_measured\": {%s}, \"rate_samples_bps\": \[%s\], \"start_times_s\": \[%s\], \"early_rates_bps\": \[%s\], \"queue_avg_samples\": \[%s\]}" \
        $duration $warmup $seed $tcpwin $tcpsize [join $out ", "] [join $cps ", "] [join $cpm ", "] [join $samples ", "] [join $starts ", "] [join $early ", "] [join $qsamples ", "]]
    exit 0
}
$ns at $duration "finish"
$ns run
