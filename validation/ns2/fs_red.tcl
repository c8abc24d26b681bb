# The Free & Stunts paper's network (§IV) without delegation, in ns-2.35:
# N infinite-data TCP flows through one RED bottleneck, the same network as scenarios/fs-fig*.toml
# with `controller = { kind = "none" }` (the paper's baseline: the same connections, no delegation).
#
#   ns fs_red.tcl RATE_MBPS FLOWS DURATION_S WARMUP_S SEED
#
# Prints one JSON object: each flow's goodput (its cumulative ACK) over [WARMUP, DURATION], the
# utilisation and Jain's index, and the RED queue's limit and thresholds.

set rate_mbps [lindex $argv 0]
set nflows    [lindex $argv 1]
set duration  [lindex $argv 2]
set warmup    [lindex $argv 3]
set seed      [lindex $argv 4]

# §IV: one bottleneck; Choice (as fs-fig4.toml): 10 ms of it, 100 ms RTT for every flow (the fluid
# model's "around 100 msec"), the rest on each sender's access link (40 ms each way).
set rtt 0.1
set bneck_delay 0.01
# Choice (as fs-fig4.toml): 1000-byte packets (ns-2's default packetSize_ is the 1000-byte
# payload; here the payload is 960 so that the IP packet is 1000 bytes, as the lab's).
set pkt 1000
set mss 960
# §IV: the queue is RTT x C / sqrt(m) packets (m flows), B_min a quarter of it, B_max = B_min +
# 3 B_min = the whole queue (the lab's `limit = "auto"`: round(0.1 x C / 8000 / sqrt(m))).
set C [expr {$rate_mbps * 1e6 / (8.0 * $pkt)}]
set limit [expr {int(round($rtt * $C / sqrt($nflows)))}]
set minth [expr {$limit / 4.0}]
set maxth $limit

set ns [new Simulator]
set rng [new RNG]
for {set k 1} {$k < $seed} {incr k} { $rng next-substream }
for {set k 1} {$k < $seed} {incr k} { $defaultRNG next-substream }
set u [new RandomVariable/Uniform]
$u set min_ 0
# Choice (as the lab's groups): flows start at uniform times within one RTT.
$u set max_ $rtt
$u use-rng $rng

set L [$ns node]
set R [$ns node]
# RED as the lab's `red` queue: counted in packets (ns-2's default is bytes), EWMA weight 0.002
# (ns-2's default -1 picks one from the link rate), max_p 0.1 (linterm_ 10, ns-2's default), no
# gentle region (ns-2.35's default gentle_ is true; the lab's RED is Floyd and Jacobson's, which
# drops every packet above max_th).
Queue/RED set bytes_ false
Queue/RED set queue_in_bytes_ false
Queue/RED set q_weight_ 0.002
Queue/RED set linterm_ 10
Queue/RED set gentle_ false
Queue/RED set mean_pktsize_ $pkt
$ns simplex-link $L $R ${rate_mbps}Mb ${bneck_delay}s RED
$ns simplex-link $R $L [expr {10 * $rate_mbps}]Mb ${bneck_delay}s DropTail
$ns queue-limit $L $R $limit
$ns queue-limit $R $L 1000
set red [[$ns link $L $R] queue]
$red set thresh_ $minth
$red set maxthresh_ $maxth

for {set i 0} {$i < $nflows} {incr i} {
    set s($i) [$ns node]
    set r($i) [$ns node]
    # Choice (as the lab's dumbbell): access links at ten times the bottleneck rate.
    $ns duplex-link $s($i) $L [expr {10 * $rate_mbps}]Mb [expr {$rtt / 2 - $bneck_delay}]s DropTail
    $ns duplex-link $R $r($i) [expr {10 * $rate_mbps}]Mb 0s DropTail
    $ns queue-limit $s($i) $L 1000
    $ns queue-limit $L $s($i) 1000
    $ns queue-limit $R $r($i) 1000
    $ns queue-limit $r($i) $R 1000
    # Choice (as fs-fig4.toml): NewReno with SACK (ns-2's Sack1), no delayed ACKs, initial window 2,
    # min RTO 200 ms (ns-2's defaults, the lab's); window_ far above any flow's share of the BDP.
    set tcp($i) [new Agent/TCP/Sack1]
    $tcp($i) set packetSize_ $mss
    $tcp($i) set window_ 100000
    $tcp($i) set windowInit_ 2
    $tcp($i) set minrto_ 0.2
    set sink($i) [new Agent/TCPSink/Sack1]
    $ns attach-agent $s($i) $tcp($i)
    $ns attach-agent $r($i) $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    $ns at [$u value] "$ftp($i) start"
    set at_warmup($i) 0
}

proc mark_warmup {} {
    global nflows tcp at_warmup
    for {set i 0} {$i < $nflows} {incr i} { set at_warmup($i) [expr {[$tcp($i) set ack_] + 1}] }
}
$ns at $warmup "mark_warmup"

proc finish {} {
    global nflows tcp at_warmup duration warmup mss rate_mbps limit minth maxth seed
    set rates {}
    set sum 0.0
    set sq 0.0
    for {set i 0} {$i < $nflows} {incr i} {
        set bps [expr {([$tcp($i) set ack_] + 1 - $at_warmup($i)) * $mss * 8.0 / ($duration - $warmup)}]
        lappend rates $bps
        set sum [expr {$sum + $bps}]
        set sq [expr {$sq + $bps * $bps}]
    }
    puts [format "{\"simulator\": \"ns-2.35\", \"rate_mbps\": %s, \"flows\": %d, \"duration_s\": %s, \"warmup_s\": %s, \"seed\": %d, \"red\": {\"limit\": %d, \"min_th\": %s, \"max_th\": %s}, \"per_flow_bps\": \[%s\], \"utilisation\": %.6f, \"jain\": %.6f}" \
        $rate_mbps $nflows $duration $warmup $seed $limit $minth $maxth [join $rates ", "] \
        [expr {$sum / ($rate_mbps * 1e6)}] [expr {$sum * $sum / ($nflows * $sq)}]]
    exit 0
}
$ns at $duration "finish"
$ns run
