//! One connection's state as the APIs see it: who the client is and where its SASL exchange
//! stands, and the order in which its Produce requests hand their batches over.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::frame::Held;
use crate::serve::attendance::InFlight;

/// The authentication state of a connection.
pub(crate) struct Session {
    pub peer: SocketAddr,
    /// No users configured, or the client authenticated (as `user`); shared with the
    /// connection's reader, which reserves room for a Produce request's records only then.
    pub authenticated: Arc<AtomicBool>,
    pub user: Option<String>,
    /// The client id its first request named (for log lines naming the client).
    pub client: Option<String>,
    /// The connection is TLS.
    pub tls: bool,
    /// Where its SASL exchange stands.
    pub sasl: Sasl,
    /// Signalled once the last Produce request taken has handed its batches to the committers
    /// ([`Session::produce_turn`]).
    pub produced: Option<tokio::sync::oneshot::Receiver<()>>,
    /// The connection's produce batches waiting for answers (see `serve::attendance`).
    pub in_flight: Arc<InFlight>,
}

/// A connection's SASL exchange.
#[derive(Debug, Default)]
pub(crate) enum Sasl {
    /// No handshake yet.
    #[default]
    None,
    /// The handshake chose PLAIN.
    Plain,
    /// The handshake chose a SCRAM mechanism; its first message is next.
    Scram(super::scram::Mechanism),
    /// The server answered the first SCRAM message; the client's proof is next.
    ScramProof(Box<super::scram::Exchange>),
    /// Done (or failed: the connection closes).
    Over,
}

/// A Produce request's place in its connection: it hands its batches over once the request
/// before it has (`wait`), then signals the next one (`done`, sent or dropped).
pub(crate) struct Turn {
    pub wait: Option<tokio::sync::oneshot::Receiver<()>>,
    pub done: tokio::sync::oneshot::Sender<()>,
    /// The connection's count of batches waiting for answers.
    pub in_flight: Arc<InFlight>,
    /// What the request's frame holds of `server.max_buffered`.
    pub held: Held,
}

impl Session {
    /// The client as log lines name it: its client id, address and user.
    pub(crate) fn who(&self) -> String {
        format!(
            "client {:?} at {}{}",
            self.client.as_deref().unwrap_or(""),
            self.peer,
            self.user.as_deref().map(|u| format!(" (user {u:?})")).unwrap_or_default()
        )
    }

    /// The next Produce request's turn. Requests are taken concurrently, but a producer's
    /// batches must reach the committers in the order it sent them, as a broker appends them:
    /// otherwise a batch could be decided before the one ahead of it and answered
    /// OUT_OF_ORDER_SEQUENCE_NUMBER while its predecessor succeeds, which idempotent
    /// producers take as a fatal loss of state.
    pub(crate) fn produce_turn(&mut self, held: Held) -> Turn {
        let (done, next) = tokio::sync::oneshot::channel();
        Turn { wait: self.produced.replace(next), done, in_flight: self.in_flight.clone(), held }
    }

    pub(crate) fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    /// Whom permissions are checked for: the user it logged in as (SASL or certificate), or
    /// `ANONYMOUS`; with the client's description for log lines.
    pub(crate) fn caller(&self) -> super::Caller {
        super::Caller { principal: self.user.as_deref().unwrap_or(super::acl::ANONYMOUS).to_string(), who: self.who() }
    }
}
