//! The run's control socket: how `ralph status`, `ralph stop` and `ralph mcp` talk to
//! a running ralph. [`protocol`] is the pure half (requests, replies, limits and the
//! rules that accept or refuse a request); [`path`] chooses where the socket lives;
//! [`server`] listens inside the run and hands what the run must act on to the
//! dispatcher through a channel, with the running agent's last output from
//! [`output_clock`]; [`client`] is the other end.

pub(crate) mod client;
pub(crate) mod output_clock;
pub(crate) mod path;
pub(crate) mod protocol;
pub(crate) mod server;

pub(crate) use protocol::{Inbound, Live, Request};
