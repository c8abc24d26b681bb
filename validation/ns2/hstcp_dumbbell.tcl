# The high-speed TCP paper's dumbbell (§III A, Figs. 1-2) in ns-2.35
# with Agent/TCP/Linux, the same network as scenarios/hstcp-qos.toml and validation/ns3/.
#
#   ns hstcp_dumbbell.tcl CC FLOWS DURATION_S SEED [WARMUP_S] [TRACE_FILE] [QUEUE_TRACE_FILE]
#
# Prints one JSON object: each flow's goodput (in-order payload, from its cumulative ACK),
# utilisation (their sum over 200 Mbit/s) and Jain's index. CC is a Linux module name for
# select_ca (reno, highspeed, bic, scalable, cubic, htcp, illinois, yeah, compound). With
# TRACE_FILE, every flow's cwnd_, ssthresh_ and ncwndcuts_ are traced there (ns-2's trace format:
# "time src_addr src_port dst_addr dst_port var value"; ncwndcuts_ counts the window reductions,
# fast recoveries and timeouts alike, tcp-linux.cc:502 and :545, where ssthresh_ shows only those
# that change it). With QUEUE_TRACE_FILE, the bottleneck's
# enqueues, dequeues and drops (ns-2's trace-queue format).

set cc       [lindex $argv 0]
set nflows   [lindex $argv 1]
set duration [lindex $argv 2]
set seed     [lindex $argv 3]
set warmup   [expr {[llength $argv] > 4 ? [lindex $argv 4] : 0}]
set tracefile [expr {[llength $argv] > 5 ? [lindex $argv 5] : ""}]
set qtracefile [expr {[llength $argv] > 6 ? [lindex $argv 6] : ""}]

# Paper §III A: 200 Mbit/s, 98 ms bottleneck; 1 Gbit/s, 1 ms access links (base RTT 200 ms).
set bneck_rate 200Mb
set bneck_delay 98ms
set access_rate 1Gb
set access_delay 1ms
# Paper §III A: a 100-packet drop-tail bottleneck queue (ns-2's DropTail limit_ counts waiting
# packets; the one being serialised is on the link, as in ns-3 and the lab).
set bneck_queue 100
# Choice (paper silent): access queues large enough never to drop (as validation/ns3's 10000).
set access_queue 10000
# Choice (paper silent, as hstcp-qos.toml and validation/ns3): 1460-byte segments, 1500-byte IP
# packets (ns-2's TCP adds its 40-byte TCP/IP header to packetSize_).
set mss 1460
# Choice (paper silent): flows start at uniform times in [0, 200 ms), one base RTT, as
# hstcp-qos.toml's start_spread (the group's rtt); the only randomness in the run.
set start_spread 0.2

set ns [new Simulator]
# ns-2's RNG (MRG32k3a): a new RNG is a stream of its own; seed N takes its N-th substream, the
# way ns-2's manual recommends for independent replications (`$rng seed N` with small N gives
# nearly proportional first draws).
set startrng [new RNG]
for {set k 1} {$k < $seed} {incr k} { $startrng next-substream }
set u [new RandomVariable/Uniform]
$u set min_ 0
$u set max_ $start_spread
$u use-rng $startrng

set L [$ns node]
set R [$ns node]
$ns duplex-link $L $R $bneck_rate $bneck_delay DropTail
$ns queue-limit $L $R $bneck_queue
$ns queue-limit $R $L $access_queue

set tf ""
if {$tracefile != ""} { set tf [open $tracefile w] }
if {$qtracefile != ""} { $ns trace-queue $L $R [open $qtracefile w] }

for {set i 0} {$i < $nflows} {incr i} {
    set s($i) [$ns node]
    set r($i) [$ns node]
    $ns duplex-link $s($i) $L $access_rate $access_delay DropTail
    $ns duplex-link $R $r($i) $access_rate $access_delay DropTail
    $ns queue-limit $s($i) $L $access_queue
    $ns queue-limit $L $s($i) $access_queue
    $ns queue-limit $R $r($i) $access_queue
    $ns queue-limit $r($i) $R $access_queue

    set tcp($i) [new Agent/TCP/Linux]
    $tcp($i) set packetSize_ $mss
    # ns-2.35 defaults kept, and given to the lab (tcp = { initial_window = 2, min_rto = "200ms" }):
    # windowInit_ 2, minrto_ 0.2 s, timestamps_ off.
    $tcp($i) set windowInit_ 2
    $tcp($i) set minrto_ 0.2
    $tcp($i) set timestamps_ false
    if {$cc == "compound"} {
        # Compound's delay window needs an RTT sample per ACK: ns-2's tcp_compound.c takes them
        # from rtt_sample(), which tcp-linux.cc calls from rtt_update() on every ACK only with
        # timestamps (otherwise once per RTT, so its cntRTT never exceeds 2 and dwnd stays 0:
        # tcp_compound.c:330). Choice: timestamps on, with a 0-byte option so that packets stay
        # 1500 bytes as the lab's (tcp.cc:642 adds ts_option_size_ to the header).
        $tcp($i) set timestamps_ true
        $tcp($i) set ts_option_size_ 0
    }
    # ns-2's window_ (the receiver's advertised window) defaults to 20 packets; the lab's window is
    # unlimited (hstcp-qos.toml), so it is set far above BDP + queue (3433 packets) and any
    # slow-start overshoot.
    $tcp($i) set window_ 1000000
    $tcp($i) set maxcwnd_ 0
    # SACK receiver, one ACK per segment (ns-2's TCPSink acks every packet: no delayed ACKs).
    set sink($i) [new Agent/TCPSink/Sack1]
    if {$cc == "compound"} { $sink($i) set ts_echo_rfc1323_ true }
    $ns attach-agent $s($i) $tcp($i)
    $ns attach-agent $r($i) $sink($i)
    $ns connect $tcp($i) $sink($i)
    $ns at 0 "$tcp($i) select_ca $cc"
    if {$tf != ""} {
        $tcp($i) attach $tf
        $tcp($i) trace cwnd_
        $tcp($i) trace ssthresh_
        $tcp($i) trace ncwndcuts_
    }
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    set start($i) [$u value]
    $ns at $start($i) "$ftp($i) start"
    set acked_at_warmup($i) 0
}

proc mark_warmup {} {
    global nflows tcp acked_at_warmup
    for {set i 0} {$i < $nflows} {incr i} { set acked_at_warmup($i) [expr {[$tcp($i) set ack_] + 1}] }
}
if {$warmup > 0} { $ns at $warmup "mark_warmup" }

proc finish {} {
    global nflows tcp acked_at_warmup duration warmup mss cc seed start tf
    set window [expr {$duration - $warmup}]
    set rates {}
    set starts {}
    set sum 0.0
    set sq 0.0
    set rtx {}
    set rtos {}
    for {set i 0} {$i < $nflows} {incr i} {
        # ack_ is the highest cumulative ACK (segment numbers from 0): ack_ + 1 segments delivered.
        set segs [expr {[$tcp($i) set ack_] + 1 - $acked_at_warmup($i)}]
        set bps [expr {$segs * $mss * 8.0 / $window}]
        lappend rates $bps
        lappend starts $start($i)
        lappend rtx [$tcp($i) set nrexmitpack_]
        lappend rtos [$tcp($i) set nrexmit_]
        set sum [expr {$sum + $bps}]
        set sq [expr {$sq + $bps * $bps}]
    }
    set jain [expr {$sq > 0 ? $sum * $sum / ($nflows * $sq) : 0}]
    set util [expr {$sum / 200e6}]
    puts [format "{\"simulator\": \"ns-2.35\", \"cc\": \"%s\", \"flows\": %d, \"duration_s\": %s, \"warmup_s\": %s, \"seed\": %d, \"start_times_s\": \[%s\], \"per_flow_bps\": \[%s\], \"retransmitted_packets\": \[%s\], \"timeouts\": \[%s\], \"utilisation\": %.6f, \"jain\": %.6f}" \
        $cc $nflows $duration $warmup $seed [join $starts ", "] [join $rates ", "] [join $rtx ", "] [join $rtos ", "] $util $jain]
    if {$tf != ""} { close $tf }
    exit 0
}
$ns at $duration "finish"
$ns run
