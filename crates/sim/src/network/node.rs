//! Nodes: hosts where agents live and routers that forward, each with a routing table and,
//! at edge routers, traffic conditioners that mark (or police) a group's aggregate.

use crate::ids::{LinkId, NodeId};
pub use crate::spec::graph::NodeKind;
use qstp_dataplane::classify::{ClassId, Classifier, PacketMeta};
use qstp_dataplane::color::Color;
use qstp_dataplane::marker::{Marker, Verdict};
use qstp_proto::Time;
use rand_chacha::ChaCha8Rng;

/// An edge marker (or policer) conditioning the packets of one class that leave a node over one
/// link.
pub struct Conditioner {
    /// The class whose aggregate it meters, as the node's classifier names it: with the default
    /// classifier ([`Classifier::GroupIndex`]), the simulator's group index.
    pub group: ClassId,
    /// The link the metered packets leave by (packets of the group going elsewhere, such as
    /// acknowledgements on the way back, are not marked).
    pub out_link: LinkId,
    /// The marker.
    pub marker: Box<dyn Marker>,
    /// The marker's own random stream.
    pub rng: ChaCha8Rng,
}

/// A host or router.
pub struct Node {
    /// Its id.
    pub id: NodeId,
    /// Host or router.
    pub kind: NodeKind,
    /// Links leaving this node.
    pub out_links: Vec<LinkId>,
    /// Next link by destination node index (`None`: unreachable); empty when the node has a
    /// single outgoing link, which is then its default route.
    routes: Vec<Option<LinkId>>,
    /// Edge markers.
    conditioners: Vec<Conditioner>,
    /// Which conditioner's class a packet belongs to.
    classifier: Classifier,
    /// Packets its conditioners dropped ([`Verdict::Drop`]).
    policed: u64,
}

impl Node {
    /// A node without links.
    pub fn new(id: NodeId, kind: NodeKind) -> Self {
        Node {
            id,
            kind,
            out_links: Vec::new(),
            routes: Vec::new(),
            conditioners: Vec::new(),
            classifier: Classifier::GroupIndex,
            policed: 0,
        }
    }

    /// The link towards `destination`, if it can be reached.
    #[inline]
    pub fn next_hop(&self, destination: NodeId) -> Option<LinkId> {
        if self.routes.is_empty() {
            return if self.out_links.len() == 1 {
                Some(self.out_links[0])
            } else {
                None
            };
        }
        self.routes.get(destination.index()).copied().flatten()
    }

    /// Install the routing table (by destination node index).
    pub(crate) fn set_routes(&mut self, routes: Vec<Option<LinkId>>) {
        self.routes = routes;
    }

    /// Add an edge marker.
    pub fn add_conditioner(&mut self, conditioner: Conditioner) {
        self.conditioners.push(conditioner);
    }

    /// Classify packets for the conditioners with `classifier` (by default the group index is
    /// the class).
    pub fn set_classifier(&mut self, classifier: Classifier) {
        self.classifier = classifier;
    }

    /// What the conditioner metering the class of the packet `meta` describes, leaving by
    /// `out_link`, decides for it (`size` bytes, arriving at `now` coloured `incoming`); `None`
    /// if no conditioner meters it. A drop is counted in [`Node::policed`]; the caller discards
    /// the packet.
    #[inline]
    pub fn condition(
        &mut self,
        now: Time,
        meta: impl FnOnce() -> PacketMeta,
        size: u32,
        incoming: Color,
        out_link: LinkId,
    ) -> Option<Verdict> {
        // Most nodes meter nothing: the packet's description is built only where one does.
        if self.conditioners.is_empty() {
            return None;
        }
        let class = self.classifier.classify(&meta());
        let verdict = self
            .conditioners
            .iter_mut()
            .find(|c| c.group == class && c.out_link == out_link)
            .map(|c| c.marker.condition(now, size as usize, incoming, &mut c.rng))?;
        if verdict == Verdict::Drop {
            self.policed += 1;
        }
        Some(verdict)
    }

    /// Packets this node's conditioners dropped.
    pub fn policed(&self) -> u64 {
        self.policed
    }
}
