//! esp32-wifi: an MCP device on Wi-Fi. An ESP32-C3 (C6, or S3 with the Xtensa toolchain) joins a
//! network as a station (esp-radio + embassy-net, DHCP) and serves MCP over Streamable HTTP at
//! `http://<its address>/mcp`, so an MCP client on a laptop connects to the board directly.
//!
//! The hardware is real and async (`src/board.rs`): an ES8311 codec on esp-hal's async I2C
//! (volume read back from its register), a relay on a GPIO with a feedback contact, an LEDC PWM
//! backlight, a screen theme and `self.reboot` (`software_reset` a second after answering),
//! served by mcp-hal's async kits through `Server::handle_async`. Pins, sizes, limits and
//! timings: `src/config.rs`.
//!
//! Credentials are read at build time from the environment (`WIFI_SSID`, `WIFI_PASSWORD`); a
//! build without them runs but never joins a network.
//!
//! With the feature `xiaozhi` the device instead connects out to a xiaozhi server over WebSocket
//! (`XIAOZHI_URL` and `XIAOZHI_TOKEN`, or `XIAOZHI_OTA_URL` for xiaozhi's OTA/config check, at
//! build time; host names through DNS), sends its hello with `features.mcp` and answers
//! the MCP messages wrapped in xiaozhi's envelope, reconnecting forever (`src/xiaozhi.rs`).
//!
//! With the feature `mqtt` it serves MCP through an MQTT broker (`MQTT_BROKER` at build time)
//! after EMQX's "MCP over MQTT" convention: retained presence with a will, a control topic, an
//! RPC topic per client, QoS 1, reconnecting forever (`src/mqtt.rs`, over `mqtt-device`).
//!
//! The engine allocates nothing: mcp-core is built without its `alloc` feature, and nothing in
//! this crate allocates either (it does not link `alloc`). The heap is the Wi-Fi driver's.
#![no_std]
#![no_main]

/// A setting from the build environment (`cargo build` with `NAME=…` set): its text, or
/// `default` (`""` when not given) when it is not set.
macro_rules! build_env {
    ($name:literal) => {
        build_env!($name, "")
    };
    ($name:literal, $default:expr) => {
        match option_env!($name) {
            Some(value) => value,
            None => $default,
        }
    };
}

mod board;
mod config;
#[cfg(feature = "endpoint")]
mod endpoint;
#[cfg(not(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint")))]
mod http;
#[cfg(feature = "mdns")]
mod mdns;
#[cfg(feature = "mqtt")]
mod mqtt;
#[cfg(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint"))]
mod net;
#[cfg(feature = "tls")]
mod tls;
#[cfg(any(feature = "xiaozhi", feature = "endpoint"))]
mod ws;
#[cfg(feature = "xiaozhi")]
mod xiaozhi;

#[cfg(all(
    feature = "tls",
    not(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint"))
))]
compile_error!(
    "the feature `tls` is for the outbound links: build it with `xiaozhi`, `mqtt` or `endpoint`"
);

#[cfg(all(
    feature = "mdns",
    any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint")
))]
compile_error!(
    "the feature `mdns` advertises the Streamable HTTP endpoint: build it without `xiaozhi`, `mqtt` and `endpoint`"
);

#[cfg(any(
    all(feature = "xiaozhi", feature = "mqtt"),
    all(feature = "xiaozhi", feature = "endpoint"),
    all(feature = "mqtt", feature = "endpoint")
))]
compile_error!(
    "choose one transport: the feature `xiaozhi`, `mqtt` or `endpoint` (or none: Streamable HTTP)"
);

use core::fmt::Write as _;

use board::{Board, EspSystem, Screen};
use config::*;
use embassy_executor::Spawner;
use embassy_net::{Runner, Stack, StackResources};
use embassy_time::{Delay, Duration, Timer};
use esp_hal::Async;
use esp_hal::clock::CpuClock;
use esp_hal::gpio::{Input, Output};
use esp_hal::i2c::master::I2c;
use esp_hal::ledc::channel::Channel;
use esp_hal::ledc::timer;
use esp_hal::ledc::{LSGlobalClkSource, Ledc, LowSpeed};
use esp_hal::peripherals::{I2C0, LEDC};
use esp_hal::rng::Rng;
use esp_hal::timer::timg::TimerGroup;
use esp_radio::wifi::sta::StationConfig;
use esp_radio::wifi::{
    AuthenticationMethodConfig, Config as WifiConfig, Interface, WifiController,
};
use mcp_core::{Config, Server};
use mcp_hal::Percent;
use mcp_hal::asynch::BlockingAsync;
use mcp_hal::drivers::asynch::Es8311;
use mcp_hal::drivers::{GpioRelay, PwmBacklight};
use static_cell::StaticCell;

esp_bootloader_esp_idf::esp_app_desc!();

/// The network to join, from the build environment.
const SSID: &str = build_env!("WIFI_SSID");
/// Its WPA2 password, from the build environment.
const PASSWORD: &str = build_env!("WIFI_PASSWORD");

/// This firmware's board: the ES8311 on the async I2C bus, the relay on two GPIOs, the LEDC
/// backlight (a register write: the blocking driver behind `BlockingAsync`).
pub type EspBoard = Board<
    Es8311<I2c<'static, Async>, Delay>,
    GpioRelay<Output<'static>, Input<'static>>,
    BlockingAsync<PwmBacklight<Channel<'static, LowSpeed>>>,
>;

/// The engine type.
pub type Engine = Server<'static, EspBoard, Caps>;

const ENGINE_CONFIG: Config = Config::new("esp32-wifi", env!("CARGO_PKG_VERSION"))
    .page_bytes(Sizes::PAGE_BYTES)
    .max_depth(MAX_DEPTH)
    // An MCP endpoint forwards nothing but answers (mcp-core's `transport::endpoint`).
    .answers_only(cfg!(feature = "endpoint"));

static ENGINE: StaticCell<Engine> = StaticCell::new();
static BOARD: StaticCell<EspBoard> = StaticCell::new();
static RESOURCES: StaticCell<StackResources<{ Sizes::SOCKETS }>> = StaticCell::new();
/// The LEDC timer must outlive the channel that points at it.
static LEDC_TIMER: StaticCell<timer::Timer<'static, LowSpeed>> = StaticCell::new();

/// 64 random bits from the hardware RNG (fed by the radio's noise once Wi-Fi runs).
pub fn random() -> u64 {
    let rng = Rng::new();
    (u64::from(rng.random()) << 32) | u64::from(rng.random())
}

/// Nothing to do, for ever (a mode built without a peer to reach).
pub async fn idle() -> ! {
    loop {
        Timer::after(Duration::from_secs(3600)).await;
    }
}

#[esp_rtos::main]
async fn main(spawner: Spawner) -> ! {
    let p = esp_hal::init(esp_hal::Config::default().with_cpu_clock(CpuClock::max()));
    esp_alloc::heap_allocator!(#[esp_hal::ram(reclaimed)] size: Sizes::WIFI_HEAP_RECLAIMED);
    esp_alloc::heap_allocator!(size: Sizes::WIFI_HEAP);
    // RSA's big integers and the server's certificate during a TLS handshake.
    #[cfg(feature = "tls")]
    esp_alloc::heap_allocator!(size: Sizes::TLS_HEAP);

    let timg0 = TimerGroup::new(p.TIMG0);
    esp_rtos::start(timg0.timer0, p.FROM_CPU_INTR0);

    let pins = config::board_pins!(p);
    let board = BOARD.init(board(pins, p.I2C0, p.LEDC));
    // A codec that fails its probe (bounded: I2C_TRANSFER_TIMEOUT_MS per transfer) is not fatal:
    // the firmware serves, and the codec's tools answer the error, naming the ES8311.
    let _ = board.codec.probe().await;
    let engine = ENGINE.init(Engine::new(ENGINE_CONFIG));
    // An MCP endpoint link offers the tools `MCP_ENDPOINT_TOOLS` admits (all by default).
    #[cfg(feature = "endpoint")]
    let registered = endpoint::register(engine);
    #[cfg(not(feature = "endpoint"))]
    let registered = engine.register_all(EspBoard::TOOLS).is_ok();
    if !registered {
        halt();
    }

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
    // The clock TLS checks certificates against.
    #[cfg(feature = "tls")]
    spawner.spawn(tls::sntp(stack).unwrap_or_else(|_| halt()));
    // Discovery on the LAN: answers `_mcp._tcp` queries once the stack has an address.
    #[cfg(feature = "mdns")]
    spawner.spawn(mdns::run(stack, mac).unwrap_or_else(|_| halt()));

    stack.wait_config_up().await;
    let mut host = heapless::String::<16>::new();
    if let Some(config) = stack.config_v4() {
        let _ = write!(host, "{}", config.address.address());
    }
    serve(stack, engine, board, host, mac).await
}

/// The board on its peripherals. Each I2C transfer is bounded twice: by the bus timeout (SCL
/// stuck) and by the codec driver's own timeout on embassy-time.
fn board(pins: Pins, i2c: I2C0<'static>, ledc: LEDC<'static>) -> EspBoard {
    let Ok(i2c) = I2c::new(i2c, config::i2c_config()) else {
        halt()
    };
    let i2c = i2c
        .with_sda(pins.i2c_sda)
        .with_scl(pins.i2c_scl)
        .into_async();
    let codec = Es8311::new(i2c, CODEC_ADDRESS, Delay).with_timeout_ms(I2C_TRANSFER_TIMEOUT_MS);
    let relay = config::relay(pins.relay_coil, pins.relay_feedback);

    let mut ledc = Ledc::new(ledc);
    ledc.set_global_slow_clock(LSGlobalClkSource::APBClk);
    let timer = LEDC_TIMER.init(ledc.timer::<LowSpeed>(timer::Number::Timer0));
    let Some(pwm) = config::backlight(&ledc, timer, pins.backlight) else {
        halt()
    };
    let start = Percent::new(BACKLIGHT_START_PERCENT).unwrap_or(Percent::MAX);
    let screen = Screen::new(BlockingAsync::new(PwmBacklight::new(pwm)), start);

    Board::new(codec, relay, screen)
}

/// The outbound link the firmware was built with (one of them; checked above).
#[cfg(feature = "endpoint")]
use endpoint as link;
#[cfg(feature = "mqtt")]
use mqtt as link;
#[cfg(feature = "xiaozhi")]
use xiaozhi as link;

/// Serves MCP over the transport the firmware was built with: the outbound link (xiaozhi or
/// MQTT, an MCP endpoint), or else the Streamable HTTP endpoint on `host`.
async fn serve(
    stack: Stack<'static>,
    engine: &'static mut Engine,
    board: &'static mut EspBoard,
    host: heapless::String<16>,
    mac: [u8; 6],
) -> ! {
    #[cfg(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint"))]
    {
        let _ = host;
        link::run(stack, engine, board, mac).await
    }
    #[cfg(not(any(feature = "xiaozhi", feature = "mqtt", feature = "endpoint")))]
    {
        let mut ep = http::Endpoint::new(engine, board, host, random);
        // A client that resolved the mDNS name may put it in Host.
        #[cfg(feature = "mdns")]
        {
            ep.alias = Some(mdns::local_name(mac));
        }
        #[cfg(not(feature = "mdns"))]
        let _ = mac;
        http::serve(stack, &mut ep, uptime_ms).await
    }
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
        if EspSystem::reboot_due() {
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
