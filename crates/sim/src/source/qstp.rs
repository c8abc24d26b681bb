//! A qstp-proto flow: a client saturated by its application, and its server, with the
//! composition its source names (run without packet protection).

use super::FlowSetup;
use crate::agent::qstp::{addresses, QstpClient, QstpServer};
use crate::agent::Agent;
use crate::error::SimError;
use qstp_dataplane::headers::UDP_IP_HEADER;
use qstp_proto::{Config, Endpoint, EndpointConfig, Protection};
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

/// The flow's sender and receiver.
pub(super) fn agents(
    config: &Config,
    message_rate: Option<qstp_proto::Rate>,
    flow: FlowSetup,
) -> Result<(Agent, Agent), SimError> {
    let FlowSetup {
        mut sender_rng,
        mut receiver_rng,
        ..
    } = flow;
    // Data packets are `packet_size` on the wire: the datagram is what IP and UDP leave.
    let mut config = config.clone();
    config.max_datagram = flow.packet_size as usize - UDP_IP_HEADER as usize;
    // The lab runs without packet protection: its packets are the protocol's own bytes, its
    // runs stay fast and repeatable, and no one on a simulated path is an attacker.
    config.protection = Protection::Null;
    config.skip_packet_numbers = false;
    config.check_receiver = false;
    config.validate().map_err(|source| SimError::QstpConfig {
        group: flow.group.name.clone(),
        source,
    })?;
    let (client_addr, server_addr) = addresses(flow.index);
    let client = Endpoint::new(
        EndpointConfig::client(key(&mut sender_rng)),
        sender_rng.next_u64(),
    );
    let mut server_config = EndpointConfig::server(key(&mut receiver_rng), config.clone());
    server_config.policy.allow_unprotected = true;
    let server = Endpoint::new(server_config, receiver_rng.next_u64());
    Ok((
        Agent::QstpClient(Box::new(
            QstpClient::new(flow.sender, client, config, server_addr).paced(message_rate),
        )),
        Agent::QstpServer(Box::new(QstpServer::new(
            flow.receiver,
            server,
            client_addr,
        ))),
    ))
}

/// A cookie key drawn from a component's stream.
fn key(rng: &mut ChaCha8Rng) -> [u8; 32] {
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    key
}
