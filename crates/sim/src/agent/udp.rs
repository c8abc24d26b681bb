//! UDP sources following a rate schedule (constant bit rate, or on/off with exponential periods)
//! and the sink that counts what arrives.

use super::{Binding, Ctx};
use crate::network::{Packet, Payload};
use qstp_dataplane::headers::UDP_IP_HEADER;
use qstp_proto::{Duration, Rate, Time};
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

/// Exponential on and off periods.
#[derive(Debug)]
pub struct OnOff {
    /// Mean on period.
    pub mean_on: Duration,
    /// Mean off period.
    pub mean_off: Duration,
    on: bool,
    switch_at: Time,
}

impl OnOff {
    /// On/off periods with these means.
    pub fn new(mean_on: Duration, mean_off: Duration) -> Self {
        OnOff {
            mean_on,
            mean_off,
            on: true,
            switch_at: Time::ZERO,
        }
    }
}

/// A UDP source sending `size`-byte packets at the rate its schedule gives.
#[derive(Debug)]
pub struct UdpSource {
    /// Where it sends.
    pub binding: Binding,
    /// `(from, rate)` steps in simulated time, sorted, the first from zero.
    schedule: Vec<(Duration, Rate)>,
    /// Packet size on the wire.
    size: u32,
    /// When the next packet goes; `None` before the start and after the schedule ends at rate 0.
    next_send: Option<Time>,
    on_off: Option<OnOff>,
    rng: ChaCha8Rng,
}

impl UdpSource {
    /// A source; `on_off` makes it an on/off source, `rng` is its own stream.
    pub fn new(
        binding: Binding,
        schedule: Vec<(Duration, Rate)>,
        size: u32,
        on_off: Option<OnOff>,
        rng: ChaCha8Rng,
    ) -> Self {
        UdpSource {
            binding,
            schedule,
            size,
            next_send: None,
            on_off,
            rng,
        }
    }

    /// The scheduled rate at `t`.
    fn rate_at(&self, t: Time) -> Rate {
        let since = t.saturating_since(Time::ZERO);
        self.schedule
            .iter()
            .take_while(|(from, _)| *from <= since)
            .last()
            .map_or(Rate::ZERO, |(_, r)| *r)
    }

    /// The first schedule step after `t`.
    fn next_step_after(&self, t: Time) -> Option<Time> {
        let since = t.saturating_since(Time::ZERO);
        self.schedule
            .iter()
            .find(|(from, _)| *from > since)
            .map(|(from, _)| Time::ZERO + *from)
    }

    /// An exponential period of mean `mean` (at least one nanosecond).
    fn exponential(&mut self, mean: Duration) -> Duration {
        let uniform = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        // libm, not the platform's ln: the same bits on every host (docs/ARCHITECTURE.md, "Principles").
        mean.mul_f64(-libm::log(1.0 - uniform))
            .max(Duration::from_nanos(1))
    }

    pub(super) fn start(&mut self, ctx: &mut Ctx) {
        self.next_send = Some(ctx.now);
        if let Some(mean_on) = self.on_off.as_ref().map(|o| o.mean_on) {
            let on_for = self.exponential(mean_on);
            let on_off = self.on_off.as_mut().expect("checked");
            on_off.on = true;
            on_off.switch_at = ctx.now + on_for;
        }
        self.on_timer(ctx);
    }

    pub(super) fn on_timer(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        self.advance_on_off(now);
        if self.on_off.as_ref().is_some_and(|o| !o.on) {
            return;
        }
        let Some(due) = self.next_send else { return };
        if due > now {
            return;
        }
        let rate = self.rate_at(now);
        let step = self.next_step_after(now);
        if rate.is_zero() {
            self.next_send = step;
            return;
        }
        ctx.recorder
            .on_sent(self.binding.flow, ctx.now, false, false);
        ctx.send(
            self.binding.node,
            self.binding.packet(now, self.size, Payload::Udp),
        );
        let next = now + rate.transmit_time(self.size as usize);
        // A new schedule step takes effect at its start, not one old interval later.
        self.next_send = Some(step.map_or(next, |s| next.min(s)));
    }

    /// Flip the on/off state for every switch that is due at `now`.
    fn advance_on_off(&mut self, now: Time) {
        while let Some((on, at)) = self.on_off.as_ref().map(|o| (o.on, o.switch_at)) {
            if at > now {
                break;
            }
            let mean = self
                .on_off
                .as_ref()
                .map(|o| if on { o.mean_off } else { o.mean_on })
                .expect("checked");
            let period = self.exponential(mean);
            let on_off = self.on_off.as_mut().expect("checked");
            on_off.on = !on;
            on_off.switch_at = at + period;
            if on_off.on {
                self.next_send = self.next_send.map(|n| n.max(at));
            }
        }
    }

    pub(super) fn poll_timeout(&self) -> Option<Time> {
        match &self.on_off {
            Some(o) if !o.on => Some(o.switch_at),
            Some(o) => Some(self.next_send.map_or(o.switch_at, |n| n.min(o.switch_at))),
            None => self.next_send,
        }
    }
}

/// A UDP sink: everything that arrives is received and delivered.
#[derive(Debug)]
pub struct UdpSink {
    /// Its flow.
    pub binding: Binding,
}

impl UdpSink {
    pub(super) fn on_packet(&mut self, ctx: &mut Ctx, packet: Packet) {
        let flow = self.binding.flow;
        ctx.recorder
            .on_received(flow, ctx.now, packet.size, packet.sent);
        ctx.recorder.on_delivered(
            flow,
            ctx.now,
            u64::from(packet.size.saturating_sub(UDP_IP_HEADER)),
        );
        ctx.network.packets.recycle(packet.payload);
    }
}
