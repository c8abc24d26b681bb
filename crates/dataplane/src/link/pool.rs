//! A plain [`PacketPool`]: packets of any type in slots, a slot reused once its packet is gone.

use super::{PacketId, PacketPool};

/// Packets of type `T` in flight, by id.
#[derive(Debug)]
pub struct Pool<T> {
    slots: Vec<Option<T>>,
    free: Vec<PacketId>,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Pool {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Pool<T> {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keep `packet` until it is removed; returns its id.
    ///
    /// # Panics
    /// With 2^32 packets in flight (a driver bounds what it holds long before).
    pub fn insert(&mut self, packet: T) -> PacketId {
        match self.free.pop() {
            Some(id) => {
                self.slots[id.index()] = Some(packet);
                id
            }
            None => {
                let id = PacketId(
                    u32::try_from(self.slots.len()).expect("more than 2^32 packets in flight"),
                );
                self.slots.push(Some(packet));
                id
            }
        }
    }

    /// The packet in slot `id`, if it lives.
    pub fn get(&self, id: PacketId) -> Option<&T> {
        self.slots.get(id.index())?.as_ref()
    }

    /// Take the packet out of slot `id`, if it lives; its slot is reused.
    pub fn remove(&mut self, id: PacketId) -> Option<T> {
        let packet = self.slots.get_mut(id.index())?.take()?;
        self.free.push(id);
        Some(packet)
    }

    /// Packets in flight.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

impl<T> PacketPool for Pool<T> {
    type Packet = T;

    /// # Panics
    /// If the slot is empty: a port holds only the ids of live packets.
    fn packet(&self, id: PacketId) -> &T {
        self.get(id).expect("packet id of a live packet")
    }

    fn discard(&mut self, id: PacketId) {
        let discarded = self.remove(id);
        debug_assert!(discarded.is_some(), "a port discarded a packet twice");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_a_dead_id_finds_nothing() {
        let mut pool = Pool::new();
        let a = pool.insert("a");
        let b = pool.insert("b");
        assert_eq!((pool.live(), pool.packet(b)), (2, &"b"));
        pool.discard(a);
        assert_eq!(pool.get(a), None);
        assert_eq!(pool.remove(a), None, "removed once only");
        assert_eq!(pool.insert("c"), a, "the freed slot first");
        assert_eq!(pool.live(), 2);
    }
}
