//! The fleet benchmark: N simulated devices (device-sim's demo board, one engine and one MQTT
//! connection each, all in this process) on a mosquitto it starts itself, and one fleet client.
//! For each N it reports
//!
//! - **online**: from starting the devices until a client already subscribed has seen every
//!   presence (connect, subscribe, retained announce);
//! - **discover**: a client that arrives afterwards, from its connect until the retained presences
//!   have named every device;
//! - **init**: `initialize` + `tools/list` with every device;
//! - **calls/s** and **p50 / p99 / max** latency of `tools/call self.audio_speaker.set_volume`
//!   (evidence `read_back`), with `--concurrency` calls in flight, round-robin over the devices.
//!
//! A benchmark, not a test: the figures depend on the machine. `--short` runs 10 and 100 devices
//! with few calls (CI); the default runs 10, 100 and 1000.
//!
//! ```text
//! cargo run --release -p mqtt-fleet --bin fleet-bench -- [--short] [--devices 10,100,1000]
//!     [--calls-per-device 20] [--concurrency 32] [--tick-ms 100]
//! ```

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_hal::sim::DemoBoard;
use mqtt_fleet::devices::{self, Device};
use mqtt_fleet::{Broker, Client};
use serde_json::json;

struct Args {
    sizes: Vec<usize>,
    calls_per_device: usize,
    min_calls: usize,
    concurrency: usize,
    tick: Duration,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        sizes: vec![10, 100, 1000],
        calls_per_device: 20,
        min_calls: 2000,
        concurrency: 32,
        tick: Duration::from_millis(100),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--short" => {
                a.sizes = vec![10, 100];
                a.calls_per_device = 5;
                a.min_calls = 200;
            }
            "--devices" => {
                a.sizes = value()?
                    .split(',')
                    .map(|s| s.trim().parse().map_err(|_| format!("bad size {s:?}")))
                    .collect::<Result<_, _>>()?;
            }
            "--calls-per-device" => {
                a.calls_per_device = value()?.parse().map_err(|_| "bad --calls-per-device")?;
            }
            "--concurrency" => {
                a.concurrency = value()?.parse().map_err(|_| "bad --concurrency")?;
            }
            "--tick-ms" => {
                a.tick = Duration::from_millis(value()?.parse().map_err(|_| "bad --tick-ms")?);
            }
            "--help" | "-h" => {
                return Err("usage: fleet-bench [--short] [--devices 10,100,1000] \
                            [--calls-per-device N] [--concurrency C] [--tick-ms MS]"
                    .into());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

struct Row {
    devices: usize,
    online: Duration,
    discover: Duration,
    init: Duration,
    calls: usize,
    failed: usize,
    rate: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = (sorted.len() * p / 100).min(sorted.len() - 1);
    sorted.get(i).copied().unwrap_or_default()
}

async fn round(url: &str, n: usize, args: &Args) -> Result<Row, String> {
    let t = Duration::from_secs(60);
    let observer = Client::connect(url, &format!("bench-observer-{n}"))?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let name = "devices/bench";
    let start = Instant::now();
    let fleet: Vec<Device<DemoBoard>> = (0..n)
        .map(|i| {
            let id = format!("bench{n}-{i:04}");
            let opts = devices::quick(url, &id, name).tick(args.tick);
            Device::spawn(opts, devices::demo_engine(), DemoBoard::default())
        })
        .collect();
    if !observer.wait_for_online(n, t).await {
        return Err(format!(
            "only {} of {n} devices came online",
            observer.devices().len()
        ));
    }
    let online = start.elapsed();

    let start = Instant::now();
    let client = Arc::new(Client::connect(url, &format!("bench-client-{n}"))?);
    if !client.wait_for_online(n, t).await {
        return Err("discovery incomplete".into());
    }
    let discover = start.elapsed();
    let ids: Arc<Vec<String>> = Arc::new(client.devices().into_keys().collect());

    let start = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.concurrency.max(1) {
        let (client, ids, next) = (client.clone(), ids.clone(), next.clone());
        workers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(id) = ids.get(i) else { return Ok(()) };
                client
                    .initialize(id, t)
                    .await
                    .map_err(|e| format!("{id}: {e}"))?;
                let list = client
                    .request(id, 1, "tools/list", json!({}), t)
                    .await
                    .map_err(|e| format!("{id}: {e}"))?;
                if list
                    .pointer("/result/tools")
                    .and_then(serde_json::Value::as_array)
                    .is_none_or(Vec::is_empty)
                {
                    return Err(format!("{id}: no tools: {list}"));
                }
            }
        });
    }
    while let Some(r) = workers.join_next().await {
        r.map_err(|e| e.to_string())??;
    }
    let init = start.elapsed();

    let total = (n * args.calls_per_device).max(args.min_calls);
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let failed = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    for _ in 0..args.concurrency.max(1) {
        let (client, ids, next) = (client.clone(), ids.clone(), next.clone());
        let (latencies, failed) = (latencies.clone(), failed.clone());
        workers.spawn(async move {
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= total {
                    return Ok(());
                }
                let Some(id) = ids.get(k % ids.len()) else { return Ok(()) };
                let volume = i64::try_from(k % 101).unwrap_or(0);
                let id_num = 10 + i64::try_from(k).unwrap_or(0);
                let sent = Instant::now();
                let r = client
                    .request(
                        id,
                        id_num,
                        "tools/call",
                        json!({"name":"self.audio_speaker.set_volume","arguments":{"volume":volume}}),
                        Duration::from_secs(10),
                    )
                    .await;
                let took = sent.elapsed();
                match r {
                    Ok(v) if v.pointer("/result/_meta/io.github.mcu-mcp~1evidence/observed") == Some(&json!(volume)) => {
                        if let Ok(mut l) = latencies.lock() {
                            l.push(took);
                        }
                    }
                    _ => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
    }
    while let Some(r) = workers.join_next().await {
        r.map_err(|e| e.to_string())??;
    }
    let wall = start.elapsed();
    let mut lat = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    lat.sort();
    let row = Row {
        devices: n,
        online,
        discover,
        init,
        calls: lat.len(),
        failed: failed.load(Ordering::Relaxed),
        rate: lat.len() as f64 / wall.as_secs_f64(),
        p50: percentile(&lat, 50),
        p99: percentile(&lat, 99),
        max: lat.last().copied().unwrap_or_default(),
    };
    // The fleet leaves: presences cleared before the next round.
    for d in fleet {
        d.stop().await?;
    }
    if !observer
        .wait_until(t, |d| d.values().all(|p| !p.online))
        .await
    {
        return Err("devices did not all leave".into());
    }
    if let Ok(c) = Arc::try_unwrap(client) {
        c.close().await;
    }
    observer.close().await;
    Ok(row)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let broker = match Broker::start() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("fleet-bench: no MQTT broker: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fleet-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let url = broker.url();
    println!(
        "fleet-bench: mosquitto on {url}; demo-board devices, one MQTT connection each, in this \
         process; {} call(s) in flight; device tick {} ms",
        args.concurrency,
        args.tick.as_millis()
    );
    println!();
    println!(
        "| devices | online (ms) | discover (ms) | init + tools/list (ms) | calls | failed | calls/s | p50 (ms) | p99 (ms) | max (ms) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut ok = true;
    for &n in &args.sizes {
        match runtime.block_on(round(&url, n, &args)) {
            Ok(r) => {
                println!(
                    "| {} | {} | {} | {} | {} | {} | {:.0} | {} | {} | {} |",
                    r.devices,
                    ms(r.online),
                    ms(r.discover),
                    ms(r.init),
                    r.calls,
                    r.failed,
                    r.rate,
                    ms(r.p50),
                    ms(r.p99),
                    ms(r.max)
                );
                ok &= r.failed == 0;
            }
            Err(e) => {
                println!("| {n} | failed: {e} |");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
