# The Free & Stunts paper's network (§IV) without delegation, in ns-2.35:
# N infinite-data TCP flows through one RED bottleneck, the same network as scenarios/fs-fig*.toml
# with `controller = { kind = "none" }` (the paper's baseline: the same connections, no delegation).
#
#   ns fs_red.tcl RATE_MBPS FLOWS DURATION_S WARMUP_S SEED [CROSS SWITCHED ON_S OFF_S RANDOM]
#
# Flow 0 is the Free, then its Stunts, then the cross traffic: the last CROSS flows, of which the
# first SWITCHED are switched on and off (Figs. 4, 5 and 7), as a tcp group's
# `onoff = { on = "ON_S s", off = "OFF_S s", random = RANDOM, flows = SWITCHED }` in the lab.
# Without them every flow sends all along (Fig. 6 and the non-random points of Figs. 5 and 7).
#
# Prints one JSON object: each flow's goodput (its cumulative ACK) over [WARMUP, DURATION], the
# utilisation and Jain's index, the RED queue's limit and thresholds, and for the switched flows
# their time on within [WARMUP, DURATION] and how many of their restarts began from a window of 1.

set rate_mbps [lindex $argv 0]
set nflows    [lindex $argv 1]
set duration  [lindex $argv 2]
set warmup    [lindex $argv 3]
set seed      [lindex $argv 4]
# §IV (Figs. 4, 5, 7; the lab's group X of fs-fig4/5/7.toml): the cross traffic, and how many of it
# are "turned on and off" (§IV, §IV-A: 8 of 10 at 40 Mbit/s; §IV-B: 19 of 20; §IV-C: a sweep).
# Default none: every flow continuous, as before these arguments.
set ncross    [expr {[llength $argv] > 5 ? [lindex $argv 5] : 0}]
set nswitched [expr {[llength $argv] > 6 ? [lindex $argv 6] : 0}]
# §IV-C "turned on and off every 10 seconds" (§IV-A "ten second on/off intervals"): the mean on
# and off periods, s (the lab's `on = "10s", off = "10s"`).
set on_s      [expr {[llength $argv] > 7 ? [lindex $argv 7] : 10}]
set off_s     [expr {[llength $argv] > 8 ? [lindex $argv 8] : 10}]
# §IV-C "randomized with a uniform distribution": 1 draws each period uniformly in [0, 2 x mean],
# 0 makes every period exactly the mean (the lab's `random = true | false`).
set random    [expr {[llength $argv] > 9 ? [lindex $argv 9] : 1}]

# §IV: one bottleneck; Choice (as fs-fig4.toml): 10 ms of it, 100 ms RTT for every flow (the fluid
# model's "around 100 msec"), the rest on each sender's access link (40 ms each way).
set rtt 0.1
set bneck_delay 0.01
# Choice (as fs-fig4.toml): 1000-byte packets (ns-2's default packetSize_ is the 1000-byte
# payload; here the payload is 960 so that the IP packet is 1000 bytes, as the lab's).
set pkt 1000
set mss 960
# §IV: the queue is RTT x C / sqrt(m) packets (m flows, the switched ones too, as the lab), B_min
# a quarter of it, B_max = B_min + 3 B_min = the whole queue (the lab's `limit = "auto"`:
# round(0.1 x C / 8000 / sqrt(m))).
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
# Choice (as the lab, whose switches draw from each flow's own stream): the on and off periods come
# from a stream of their own (ns-2's next RNG stream, substream SEED), so that the start times
# above are the same draws with or without switching.
set srng [new RNG]
for {set k 1} {$k < $seed} {incr k} { $srng next-substream }
set period [new RandomVariable/Uniform]
$period set min_ 0
$period use-rng $srng

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
    set start($i) [$u value]
    $ns at $start($i) "$ftp($i) start"
    set at_warmup($i) 0
}

# The switched cross flows (§IV: "a number of the cross-traffic connections are turned on and off
# at varying times"), as the lab's `onoff` (crates/sim/src/agent/switch.rs): each starts on at
# its start time, then alternates off and on periods until the end of the run.
proc period {mean} {
    global period random
    # Choice (as the lab's `random = true`): the paper gives the mean and "a uniform
    # distribution" only, so each period is uniform in [0, 2 x mean], drawn afresh.
    if {!$random} { return $mean }
    $period set max_ [expr {2.0 * $mean}]
    return [$period value]
}
# Off: the application has no more data. Everything sent so far is still delivered (recovery and
# timeouts go on), nothing new is sent: the lab's paused sender ("it still finishes recovering
# what is in flight"). Not Application/FTP's `stop` (ns-source.tcl:55-58), whose `advance 0`
# sets curseq_ to maxseq_ (TcpAgent::command, tcp.cc:823-829) and so leaves the last segment sent
# out of the application's data: Sack1's send_much (tcp-sack1.cc:434-437) would never resend it.
proc pause {i} {
    global tcp
    $tcp($i) advance [expr {[$tcp($i) set maxseq_] + 1}]
}
# On: infinite data again (Application/FTP's `start`, `send -1`). Choice (ns-2's defaults, as the
# paper's runs had them): slow_start_restart_ and restart_bugfix_ (ns-default.tcl:950-951)
# restart an idle connection: its retransmission timer keeps running with nothing outstanding
# (newtimer, tcp.cc:1003) and, an RTO after the last ACK, sets cwnd_ to 1 and keeps ssthresh_
# (tcp.cc:1869, :1893-1898). The lab restarts from min(IW, cwnd) = 2 segments, ssthresh kept
# (RFC 5681 §4.1; crates/tcp/src/sender/mod.rs set_app_paused): one segment apart, left so.
# Counted here: the restarts that find the window at 1 with nothing outstanding.
proc resume {i} {
    global tcp ftp restarts
    if {[$tcp($i) set ack_] == [$tcp($i) set maxseq_] && [$tcp($i) set cwnd_] == 1} {
        incr restarts($i)
    }
    $ftp($i) start
}
set first_cross [expr {$nflows - $ncross}]
for {set i $first_cross} {$i < $first_cross + $nswitched} {incr i} {
    set restarts($i) 0
    set on_periods($i) {}
    set t $start($i)
    while 1 {
        set t_off [expr {$t + [period $on_s]}]
        lappend on_periods($i) [list $t [expr {min($t_off, $duration)}]]
        if {$t_off >= $duration} break
        $ns at $t_off "pause $i"
        set t [expr {$t_off + [period $off_s]}]
        if {$t >= $duration} break
        $ns at $t "resume $i"
    }
}

proc mark_warmup {} {
    global nflows tcp at_warmup
    for {set i 0} {$i < $nflows} {incr i} { set at_warmup($i) [expr {[$tcp($i) set ack_] + 1}] }
}
$ns at $warmup "mark_warmup"

proc finish {} {
    global nflows tcp at_warmup duration warmup mss rate_mbps limit minth maxth seed
    global ncross nswitched on_s off_s random first_cross on_periods restarts
    set rates {}
    set sum 0.0
    set sq 0.0
    for {set i 0} {$i < $nflows} {incr i} {
        set bps [expr {([$tcp($i) set ack_] + 1 - $at_warmup($i)) * $mss * 8.0 / ($duration - $warmup)}]
        lappend rates $bps
        set sum [expr {$sum + $bps}]
        set sq [expr {$sq + $bps * $bps}]
    }
    # The switched flows' time on within [WARMUP, DURATION], s, and their restarts from 1.
    set on {}
    set from1 {}
    for {set i $first_cross} {$i < $first_cross + $nswitched} {incr i} {
        set s 0.0
        foreach p $on_periods($i) {
            set a [expr {max([lindex $p 0], $warmup)}]
            set b [expr {min([lindex $p 1], $duration)}]
            if {$b > $a} { set s [expr {$s + $b - $a}] }
        }
        lappend on [format %.3f $s]
        lappend from1 $restarts($i)
    }
    set cross ""
    if {$ncross > 0} {
        set cross [format ", \"cross\": {\"first\": %d, \"flows\": %d, \"switched\": %d, \"on_s\": %s, \"off_s\": %s, \"random\": %d, \"on_time_s\": \[%s\], \"restarts_from_1\": \[%s\]}" \
            $first_cross $ncross $nswitched $on_s $off_s $random [join $on ", "] [join $from1 ", "]]
    }
    puts [format "{\"simulator\": \"ns-2.35\", \"rate_mbps\": %s, \"flows\": %d, \"duration_s\": %s, \"warmup_s\": %s, \"seed\": %d, \"red\": {\"limit\": %d, \"min_th\": %s, \"max_th\": %s}, \"per_flow_bps\": \[%s\], \"utilisation\": %.6f, \"jain\": %.6f%s}" \
        $rate_mbps $nflows $duration $warmup $seed $limit $minth $maxth [join $rates ", "] \
        [expr {$sum / ($rate_mbps * 1e6)}] [expr {$sum * $sum / ($nflows * $sq)}] $cross]
    exit 0
}
$ns at $duration "finish"
$ns run
