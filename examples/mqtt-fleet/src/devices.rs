//! Simulated devices on the broker, in this process: each one its own board, its own engine and
//! its own MQTT connection (`mcp_host::mqtt`), as N firmwares would be.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_core::registry::Tool;
use mcp_core::schema::Param;
use mcp_core::server::Delivery;
use mcp_core::{Args, Capacities, Config, Evidence, Level, Output, Reading, Reply, ToolResult};
use mcp_hal::sim::DemoBoard;
use mcp_host::mqtt::{self, Backoff, Options};
use mcp_host::{Board, Engine, HostCaps, HostEvent};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A board that records every call it executes: the proof that no call ran twice.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The entries appended, in order.
    pub entries: Vec<i64>,
}

impl Board for Ledger {}

fn append_entry(board: &mut Ledger, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let entry = args.int("entry")?;
    board.entries.push(entry);
    // Read the entry back from the ledger: the evidence of the effect.
    let observed = board.entries.last().copied().unwrap_or(-1);
    let count = i64::try_from(board.entries.len()).unwrap_or(i64::MAX);
    Ok(Output::int(count).with_evidence(
        Evidence::new(Level::ReadBack)
            .commanded(Reading::Int(entry))
            .observed(Reading::Int(observed)),
    ))
}

/// `self.ledger.append {"entry": N}`: appends N, answers the ledger's length, with the entry read
/// back as evidence. An acting tool: its answers are remembered for retransmissions.
pub static APPEND: Tool<Ledger> = Tool::new(
    "self.ledger.append",
    "Appends an entry to the device's ledger",
    append_entry,
)
.params(&[Param::integer("entry", "The entry").range(0, i64::MAX)]);

/// The arguments of a `tools/call` of [`APPEND`] with `entry`.
pub fn append(entry: i64) -> serde_json::Value {
    serde_json::json!({"name":"self.ledger.append","arguments":{"entry":entry}})
}

/// The ledger device's engine.
pub type LedgerEngine = Engine<Ledger, HostCaps<4, 2>>;

/// A fresh ledger engine with its one tool.
pub fn ledger_engine() -> Box<LedgerEngine> {
    let mut e = Box::new(LedgerEngine::new(Config::new("ledger", "1.0.0")));
    let _ = e.register(&APPEND);
    e
}

/// The demo board's engine (device-sim's tool set).
pub type DemoEngine = Engine<DemoBoard, HostCaps<32, 4>>;

/// A fresh demo-board engine with every standard tool.
pub fn demo_engine() -> Box<DemoEngine> {
    let mut e = Box::new(DemoEngine::new(Config::new("demo-board", "1.0.0")));
    for tool in DemoBoard::TOOLS {
        let _ = e.register(tool);
    }
    e
}

/// Device options for tests and benchmarks: reconnect quickly (100 ms doubling to 1 s), a 5 s
/// keep-alive, a 2 s connect timeout.
pub fn quick(broker: &str, id: &str, server_name: &str) -> Options {
    Options::new(broker, id)
        .server_name(server_name, "A simulated device")
        .reconnect(Backoff::new(
            Duration::from_millis(100),
            Duration::from_secs(1),
        ))
        .keep_alive(mqtt::MIN_KEEP_ALIVE)
        .connect_timeout(Duration::from_secs(2))
        .tick(Duration::from_millis(50))
}

/// A ledger device `id` on `url`, its options [`quick`] ones changed by `tweak`.
pub fn ledger_device(
    url: &str,
    id: &str,
    tweak: impl FnOnce(Options) -> Options,
) -> Device<Ledger> {
    Device::spawn(
        tweak(quick(url, id, "devices/ledger")),
        ledger_engine(),
        Ledger::default(),
    )
}

/// A hook that records every host event of a device, and what it recorded.
pub fn recorder() -> (mcp_host::EventHook, Arc<Mutex<Vec<HostEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let e = events.clone();
    let hook: mcp_host::EventHook = Arc::new(move |ev: &HostEvent| {
        if let Ok(mut events) = e.lock() {
            events.push(ev.clone());
        }
    });
    (hook, events)
}

/// The answers among `events`: the tool that ran (`None`: a replay or a refusal), what the
/// transport had reported of a replayed first answer, and what became of this one.
pub fn answered(
    events: &Mutex<Vec<HostEvent>>,
) -> Vec<(Option<&'static str>, Option<Delivery>, Delivery)> {
    let Ok(events) = events.lock() else {
        return Vec::new();
    };
    events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Answered {
                ran,
                replay,
                delivery,
            } => Some((*ran, *replay, *delivery)),
            _ => None,
        })
        .collect()
}

/// Waits until `holds` is true, polling every 20 ms for at most `timeout`; whether it is.
pub async fn eventually(timeout: Duration, holds: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < timeout {
        if holds() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    holds()
}

/// A device running on the broker.
#[derive(Debug)]
pub struct Device<C> {
    /// Its board (inspect it: the ledger, the codec register).
    pub board: Arc<Mutex<C>>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), mqtt::Error>>,
}

impl<C: Board> Device<C> {
    /// Starts a device with `engine` on `board`.
    pub fn spawn<K: Capacities>(opts: Options, engine: Box<Engine<C, K>>, board: C) -> Self {
        let board = Arc::new(Mutex::new(board));
        let (stop, stopped) = oneshot::channel::<()>();
        let b = board.clone();
        let task = tokio::spawn(async move {
            mqtt::run_until(&opts, engine, b, async {
                let _ = stopped.await;
            })
            .await
        });
        Device {
            board,
            stop: Some(stop),
            task,
        }
    }

    /// Leaves on purpose (clears the presence) and waits for the task to end.
    ///
    /// # Errors
    /// The device's error, if it stopped with one.
    pub async fn stop(mut self) -> Result<(), String> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        match (&mut self.task).await {
            Ok(r) => r.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// `true` while the task runs.
    pub fn is_running(&self) -> bool {
        !self.task.is_finished()
    }
}
