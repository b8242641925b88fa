//! [`Watch`]: the publish state of one sensor resource, and what the sensor resources share.

use crate::publish::{Gate, Policy};
use crate::sensor::{Sensor, Unit};
use crate::{Error, ErrorKind};

/// A sensor's last sample, as a [`Watch`] keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The reading in thousandths of `unit`, or why it failed.
    pub value: Result<i32, ErrorKind>,
    /// The sensor's unit.
    pub unit: Unit,
    /// When it was taken (the `now_ms` of the poll).
    pub at_ms: u64,
}

/// The publish state of one sensor resource: a [`Gate`] with the resource's URI, and the last
/// sample. The firmware keeps one per sensor (a `static`, a field of its board) and polls it
/// from the main loop with the sensor; it answers the URI to
/// [`publish`](mcp_core::Server::publish) when the [`Policy`] says so:
///
/// ```
/// # #[cfg(feature = "sim")] {
/// use mcp_hal::kits::{temperature, Watch};
/// # use mcp_hal::sim::{SimThermometer, Faults};
/// # let mut thermometer = SimThermometer::new(Faults::NONE);
/// let mut watch: Watch = temperature::watch();
/// # let mut published = Vec::new();
/// for now in (0..3_000).step_by(10) {
///     # if now == 1_500 { thermometer.set_millicelsius(23_000); }
///     if let Some(uri) = watch.poll(now, &mut thermometer) {
///         // server.publish(uri);
///         # published.push((now, uri));
///     }
/// }
/// # assert_eq!(published, [(1_500, temperature::URI)]);
/// # }
/// ```
///
/// A read error is kept as the last sample and is not published: the next good reading is
/// compared with the last published one. Async firmware polls with
/// [`poll_async`](Watch::poll_async) over the [async sensor](crate::asynch::sensor::Sensor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watch {
    uri: &'static str,
    gate: Gate,
    latest: Option<Sample>,
}

impl Watch {
    /// A watch of the resource at `uri`, publishing by `policy`.
    pub const fn new(uri: &'static str, policy: Policy) -> Self {
        Watch {
            uri,
            gate: Gate::new(policy),
            latest: None,
        }
    }

    /// The same watch with another policy (and no baseline yet).
    #[must_use]
    pub const fn policy(self, policy: Policy) -> Self {
        Watch::new(self.uri, policy)
    }

    /// Reads `sensor` at `now_ms`; the resource's URI when the change is to be published.
    pub fn poll<S: Sensor>(&mut self, now_ms: u64, sensor: &mut S) -> Option<&'static str> {
        let value = sensor.read().map_err(|e| e.kind());
        self.offer(now_ms, value, sensor.unit())
    }

    /// [`poll`](Self::poll) over an [async sensor](crate::asynch::sensor::Sensor): the read is
    /// awaited.
    pub async fn poll_async<S: crate::asynch::sensor::Sensor>(
        &mut self,
        now_ms: u64,
        sensor: &mut S,
    ) -> Option<&'static str> {
        let value = sensor.read().await.map_err(|e| e.kind());
        self.offer(now_ms, value, sensor.unit())
    }

    /// Offers a reading taken some other way (`value` in thousandths of `unit`); the
    /// resource's URI when it is to be published.
    pub fn offer(
        &mut self,
        now_ms: u64,
        value: Result<i32, ErrorKind>,
        unit: Unit,
    ) -> Option<&'static str> {
        self.latest = Some(Sample {
            value,
            unit,
            at_ms: now_ms,
        });
        let v = value.ok()?;
        self.gate.update(now_ms, v).then_some(self.uri)
    }

    /// The last sample, `None` before the first poll.
    pub const fn latest(&self) -> Option<Sample> {
        self.latest
    }

    /// The resource's URI.
    pub const fn uri(&self) -> &'static str {
        self.uri
    }

    /// The gate (its policy, the last published value).
    pub const fn gate(&self) -> &Gate {
        &self.gate
    }
}

/// What the sensor resources' readers share (feature `resources`).
#[cfg(feature = "resources")]
pub(crate) mod read {
    use mcp_core::{Reply, ToolError, ToolResult};

    use super::Watch;
    use crate::sensor::{Milli, Sensor, Unit};
    use crate::{Error, ErrorKind};

    /// The message of a failed sensor read: what a client reads in the resource's error.
    const fn read_error(kind: ErrorKind) -> &'static str {
        match kind {
            ErrorKind::NoAcknowledge => "The sensor did not acknowledge (I2C NACK)",
            ErrorKind::Bus => "Bus error talking to the sensor",
            ErrorKind::Timeout => "The sensor did not answer in time",
            _ => kind.message(),
        }
    }

    /// A sensor resource's contents: `{"<unit key>":<decimal>}` (`{"celsius":21.5}`), or the
    /// failure.
    fn contents(reply: &mut Reply<'_>, value: Result<i32, ErrorKind>, unit: Unit) -> ToolResult {
        match value {
            Ok(v) => reply.text(format_args!("{{\"{}\":{}}}", unit.key(), Milli(v))),
            Err(kind) => Err(ToolError::new(read_error(kind))),
        }
    }

    /// Reads a sensor now, for a resource read.
    pub(crate) fn read_now<S: Sensor>(sensor: &mut S, reply: &mut Reply<'_>) -> ToolResult {
        let value = sensor.read().map_err(|e| e.kind());
        contents(reply, value, sensor.unit())
    }

    /// The last sample of a watch, for a resource read (async kits: the reader cannot await).
    pub(crate) fn read_latest(watch: &Watch, reply: &mut Reply<'_>) -> ToolResult {
        match watch.latest() {
            Some(s) => contents(reply, s.value, s.unit),
            None => Err(ToolError::new("The sensor has not been read yet")),
        }
    }
}
