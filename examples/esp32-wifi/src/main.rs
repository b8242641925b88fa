//! esp32-wifi: an MCP device on the LAN. An ESP32-C3 (C6, or S3 with the Xtensa toolchain) joins a
//! Wi-Fi network as a station (esp-radio + embassy-net, DHCP) and serves MCP over Streamable HTTP
//! at `http://<its address>/mcp`, so an MCP client on a laptop connects to the board directly.
//!
//! Credentials are read at build time from the environment (`WIFI_SSID`, `WIFI_PASSWORD`); a
//! build without them runs but never joins a network.
//!
//! The tools are device-sim's, over mcp-hal's simulated devices (`src/board.rs`), so a bare
//! DevKit can be driven end to end; `examples/esp32-serial` shows the same kits on real drivers.
//!
//! With the feature `xiaozhi` the device instead connects out to a xiaozhi server over WebSocket
//! (`XIAOZHI_URL`, `XIAOZHI_TOKEN` at build time), sends its hello with `features.mcp` and answers
//! the MCP messages wrapped in xiaozhi's envelope (`src/xiaozhi.rs`).
#![no_std]
#![no_main]

extern crate alloc;

mod board;
#[cfg(not(feature = "xiaozhi"))]
mod http;
#[cfg(feature = "xiaozhi")]
mod xiaozhi;

use core::fmt::Write as _;

use board::{Board, EspTime};
use embassy_executor::Spawner;
use embassy_net::{Runner, Stack, StackResources};
use embassy_time::{Duration, Timer};
use esp_hal::clock::CpuClock;
use esp_hal::rng::Rng;
use esp_hal::timer::timg::TimerGroup;
use esp_radio::wifi::sta::StationConfig;
use esp_radio::wifi::{
    AuthenticationMethodConfig, Config as WifiConfig, Interface, WifiController,
};
use mcp_core::{Config, Server};
use mcp_hal::sim::Faults;
use static_cell::StaticCell;

esp_bootloader_esp_idf::esp_app_desc!();

/// The network to join, from the build environment.
const SSID: &str = match option_env!("WIFI_SSID") {
    Some(s) => s,
    None => "",
};
/// Its WPA2 password, from the build environment.
const PASSWORD: &str = match option_env!("WIFI_PASSWORD") {
    Some(s) => s,
    None => "",
};

/// Tool slots (8 used).
const TOOL_CAPACITY: usize = 10;
/// Long-running actions tracked at once (motor moves).
const TASKS: usize = 2;
/// Recent calls remembered for retransmissions.
const CACHE: usize = 2;
/// Response bytes kept per remembered call.
const CACHE_BYTES: usize = 320;
/// The largest request body accepted.
pub const LINE: usize = 2048;
/// The response buffer: a `tools/list` page or the largest tool result.
pub const OUT: usize = 3072;
/// The `tools/list` page budget.
const PAGE_BYTES: usize = 2048;

/// The engine type.
pub type Engine = Server<'static, Board, TOOL_CAPACITY, TASKS, CACHE, CACHE_BYTES>;

const ENGINE_CONFIG: Config = Config::new("esp32-wifi", env!("CARGO_PKG_VERSION"))
    .page_bytes(PAGE_BYTES)
    .max_depth(128);

static ENGINE: StaticCell<Engine> = StaticCell::new();
static BOARD: StaticCell<Board> = StaticCell::new();
static RESOURCES: StaticCell<StackResources<3>> = StaticCell::new();

/// 64 random bits from the hardware RNG (fed by the radio's noise once Wi-Fi runs).
pub fn random() -> u64 {
    let rng = Rng::new();
    (u64::from(rng.random()) << 32) | u64::from(rng.random())
}

#[esp_rtos::main]
async fn main(spawner: Spawner) -> ! {
    let p = esp_hal::init(esp_hal::Config::default().with_cpu_clock(CpuClock::max()));
    // The Wi-Fi driver needs about 50 KiB of heap (esp-radio's documentation); the engine none.
    esp_alloc::heap_allocator!(#[esp_hal::ram(reclaimed)] size: 64 * 1024);
    esp_alloc::heap_allocator!(size: 32 * 1024);

    let timg0 = TimerGroup::new(p.TIMG0);
    esp_rtos::start(timg0.timer0, p.FROM_CPU_INTR0);

    let Ok(mut controller) = WifiController::new(p.WIFI, Default::default()) else {
        halt()
    };
    let station = StationConfig::default()
        .with_ssid(SSID.try_into().unwrap_or_default())
        .with_authentication(AuthenticationMethodConfig::Wpa2Personal(
            PASSWORD.try_into().unwrap_or_default(),
        ));
    if controller
        .set_config(&WifiConfig::Station(station))
        .is_err()
    {
        halt();
    }
    let station = Interface::station();
    let mac = station.mac_address();
    let (stack, runner) = embassy_net::new(
        station,
        embassy_net::Config::dhcpv4(Default::default()),
        RESOURCES.init(StackResources::new()),
        random(),
    );
    spawner.spawn(connection(controller).unwrap_or_else(|_| halt()));
    spawner.spawn(net_task(runner).unwrap_or_else(|_| halt()));
    spawner.spawn(reboot_watch().unwrap_or_else(|_| halt()));

    let engine = ENGINE.init(Engine::new(ENGINE_CONFIG));
    if engine.register_all(Board::TOOLS).is_err() {
        halt();
    }
    let board = BOARD.init(Board::with_timebase(EspTime, Faults::NONE, false));

    stack.wait_config_up().await;
    let mut host = heapless::String::<16>::new();
    if let Some(config) = stack.config_v4() {
        let _ = write!(host, "{}", config.address.address());
    }
    serve(stack, engine, board, host, mac).await
}

#[cfg(not(feature = "xiaozhi"))]
async fn serve(
    stack: Stack<'static>,
    engine: &'static mut Engine,
    board: &'static mut Board,
    host: heapless::String<16>,
    _mac: [u8; 6],
) -> ! {
    let mut ep = http::Endpoint::new(engine, board, host, random);
    http::serve(stack, &mut ep, uptime_ms).await
}

#[cfg(feature = "xiaozhi")]
async fn serve(
    stack: Stack<'static>,
    engine: &'static mut Engine,
    board: &'static mut Board,
    _host: heapless::String<16>,
    mac: [u8; 6],
) -> ! {
    xiaozhi::run(stack, engine, board, mac).await
}

/// Milliseconds since boot, from embassy-time.
pub fn uptime_ms() -> u64 {
    embassy_time::Instant::now().as_millis()
}

/// `self.reboot` arms a restart one second after answering; this task carries it out.
#[embassy_executor::task]
async fn reboot_watch() {
    loop {
        Timer::after(Duration::from_millis(100)).await;
        if board::reboot_due(embassy_time::Instant::now().as_millis()) {
            esp_hal::system::software_reset();
        }
    }
}

/// Joins the network and rejoins it after a disconnect.
#[embassy_executor::task]
async fn connection(mut controller: WifiController<'static>) {
    loop {
        if SSID.is_empty() {
            // Built without credentials: nothing to join.
            Timer::after(Duration::from_secs(3600)).await;
            continue;
        }
        match controller.connect_async().await {
            Ok(_) => {
                let _ = controller.wait_for_disconnect_async().await;
            }
            Err(_) => Timer::after(Duration::from_secs(5)).await,
        }
    }
}

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, Interface>) {
    runner.run().await
}

/// A start-up failure (the radio or the tool table): nothing can work.
fn halt() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    esp_hal::system::software_reset()
}
