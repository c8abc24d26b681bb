//! One registry per kind of component: the list that names each queue discipline, marker and loss
//! model, and everything derived from it.
//!
//! A family (queues, markers, loss models) writes its registry once, as one [`registry!`] list of
//! `"name" => Variant(SpecType)` lines. The macro makes the family's spec enum (serde-tagged by
//! `kind`, so a spec travels as JSON with the same `kind` a scenario writes), the list of kinds
//! with their documentation (for `--help` and errors), the reader that dispatches a table on its
//! `kind`, and the access to the kind's own behaviour behind the family's trait. Each spec type
//! lives in its own file with its reader, rules and constructor: adding a kind is that file and
//! one line here.

use crate::params::{ParamResult, ParamTable};

/// What every kind of every family provides, beside its family's own trait.
pub trait Kind: Sized {
    /// One line for `--help`: what it is, its source, and its keys.
    const DOC: &'static str;
    /// Read the kind's keys (not `kind` itself) from `t`.
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self>;
}

/// Declare a family's spec enum from its registry list. See the module documentation.
///
/// `visit VisitorTrait` also gives `fn visit<V: VisitorTrait>(&self, v: V) -> V::Output`, for
/// the family's generic operations (building a queue for any packet type) that `dyn` cannot
/// carry.
#[macro_export]
macro_rules! registry {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: dyn $tr:path, $what:literal {
            $($kind:literal => $var:ident($ty:ty)),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind")]
        $vis enum $name {
            $(
                #[doc = concat!("`kind = \"", $kind, "\"`")]
                #[serde(rename = $kind)]
                $var($ty),
            )+
        }

        impl $name {
            /// Every kind, as `(name, one line of documentation)`, in registry order.
            pub const KINDS: &'static [(&'static str, &'static str)] =
                &[$(($kind, <$ty as $crate::registry::Kind>::DOC)),+];

            /// The name of this spec's kind, as a scenario writes it.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Self::$var(_) => $kind,)+
                }
            }

            /// This spec's own behaviour.
            pub fn get(&self) -> &dyn $tr {
                match self {
                    $(Self::$var(spec) => spec,)+
                }
            }

            /// Read a table naming its `kind`, and that kind's keys.
            pub fn read(
                t: &mut dyn $crate::params::ParamTable,
            ) -> $crate::params::ParamResult<Self> {
                let kind = t.str("kind")?;
                match kind.as_str() {
                    $($kind => <$ty as $crate::registry::Kind>::read(t).map(Self::$var),)+
                    other => {
                        let names: Vec<&str> = Self::KINDS.iter().map(|k| k.0).collect();
                        Err($crate::params::unknown_kind(t, $what, other, &names))
                    }
                }
            }
        }

        $(
            impl From<$ty> for $name {
                fn from(spec: $ty) -> Self {
                    Self::$var(spec)
                }
            }
        )+
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: dyn $tr:path, $what:literal {
            $($kind:literal => $var:ident($ty:ty)),+ $(,)?
        }
        visit $visitor:path
    ) => {
        $crate::registry! {
            $(#[$meta])*
            $vis enum $name: dyn $tr, $what {
                $($kind => $var($ty)),+
            }
        }

        impl $name {
            /// Hand this spec, as its own type, to `visitor`.
            pub fn visit<V: $visitor>(&self, visitor: V) -> V::Output {
                match self {
                    $(Self::$var(spec) => visitor.visit(spec),)+
                }
            }
        }
    };
}
