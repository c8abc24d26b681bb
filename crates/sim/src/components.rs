//! Builds the queues, markers and loss models a spec names, as the network needs them, after
//! checking each spec (so a bad one is an error naming the component, never a panic).

use crate::error::{ComponentError, SimError};
use crate::network::QueuedPacket;
use qstp_dataplane::loss::LossSpec;
use qstp_dataplane::loss::{self, LossModel};
use qstp_dataplane::marker::MarkerSpec;
use qstp_dataplane::marker::{self, Marker};
use qstp_dataplane::queue::QueueSpec;
use qstp_dataplane::queue::{self, QueueDiscipline};

fn refused(component: &str, error: impl Into<ComponentError>) -> SimError {
    SimError::Component {
        component: component.to_string(),
        error: error.into(),
    }
}

/// The queue `spec` describes; `component` names it in errors.
pub(crate) fn queue(
    spec: &QueueSpec,
    group_names: &[String],
    component: &str,
) -> Result<Box<dyn QueueDiscipline<QueuedPacket>>, SimError> {
    spec.validate().map_err(|e| refused(component, e))?;
    Ok(queue::build(spec, group_names))
}

/// The marker `spec` describes.
pub(crate) fn marker(spec: &MarkerSpec, component: &str) -> Result<Box<dyn Marker>, SimError> {
    spec.validate().map_err(|e| refused(component, e))?;
    Ok(marker::build(spec))
}

/// The loss model `spec` describes.
pub(crate) fn loss(spec: &LossSpec, component: &str) -> Result<Box<dyn LossModel>, SimError> {
    spec.validate().map_err(|e| refused(component, e))?;
    Ok(loss::build(spec))
}
