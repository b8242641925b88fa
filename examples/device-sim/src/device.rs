//! The simulated device: an audio codec with a real register, a screen, and a reboot line; and
//! the MCP tools that drive them.

use mcp_core::registry::{Annotations, Tool};
use mcp_core::{Args, Evidence, Level, Output, Param, Reading, Reply, ToolError, ToolResult};

/// An ES8311-style codec: the DAC volume lives in register 0x32, where 0x00 is -95.5 dB and
/// 0xBF is 0 dB in 0.5 dB steps. Percent is mapped linearly onto 0x00..=0xBF.
#[derive(Debug, Default)]
pub struct Codec {
    dac_volume: u8,
}

impl Codec {
    /// Register value for a percentage (0..=100).
    pub fn percent_to_reg(percent: u8) -> u8 {
        let reg = (u32::from(percent.min(100)) * 0xBF + 50) / 100;
        u8::try_from(reg).unwrap_or(0xBF)
    }

    /// Percentage for a register value.
    pub fn reg_to_percent(reg: u8) -> u8 {
        let p = (u32::from(reg.min(0xBF)) * 100 + 0xBF / 2) / 0xBF;
        u8::try_from(p).unwrap_or(100)
    }

    /// Writes the DAC volume register.
    pub fn write_reg(&mut self, value: u8) {
        self.dac_volume = value;
    }

    /// Reads the DAC volume register.
    pub fn read_reg(&self) -> u8 {
        self.dac_volume
    }
}

/// Screen theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Theme {
    /// Light.
    Light,
    /// Dark.
    Dark,
}

impl Theme {
    fn as_str(self) -> &'static str {
        match self {
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }
}

/// Everything the tools act on.
#[derive(Debug)]
pub struct Device {
    /// The codec.
    pub codec: Codec,
    /// Backlight duty in percent (a PWM output: it cannot be read back).
    pub brightness: u8,
    /// Screen theme.
    pub theme: Theme,
    /// Set when a reboot has been scheduled.
    pub reboot_scheduled: bool,
}

impl Default for Device {
    fn default() -> Self {
        let mut codec = Codec::default();
        codec.write_reg(Codec::percent_to_reg(70));
        Device {
            codec,
            brightness: 80,
            theme: Theme::Light,
            reboot_scheduled: false,
        }
    }
}

fn percent(args: &Args<'_>, name: &str) -> Result<u8, ToolError> {
    // Validation already guaranteed 0..=100.
    u8::try_from(args.int(name)?).map_err(|_| ToolError::new("Tool bug: percentage out of range"))
}

fn get_device_status(dev: &mut Device, _: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let volume = i64::from(Codec::reg_to_percent(dev.codec.read_reg()));
    let (brightness, theme) = (i64::from(dev.brightness), dev.theme.as_str());
    reply.json(|o| {
        o.object("audio_speaker", |o| {
            o.int("volume", volume);
        })
        .object("screen", |o| {
            o.int("brightness", brightness).str("theme", theme);
        });
    })
}

fn set_volume(dev: &mut Device, args: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let commanded = percent(args, "volume")?;
    dev.codec.write_reg(Codec::percent_to_reg(commanded));
    let observed = Codec::reg_to_percent(dev.codec.read_reg());
    let evidence = Evidence::new(Level::ReadBack)
        .commanded(Reading::Int(commanded.into()))
        .observed(Reading::Int(observed.into()));
    if observed != commanded {
        let err = reply.error(format_args!(
            "Volume read back as {observed}, commanded {commanded}"
        ));
        return Err(err.with_evidence(evidence));
    }
    Ok(Output::bool(true).with_evidence(evidence))
}

fn set_brightness(dev: &mut Device, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    let commanded = percent(args, "brightness")?;
    dev.brightness = commanded;
    // A PWM duty cycle cannot be read back: the honest claim is "applied".
    Ok(Output::bool(true)
        .with_evidence(Evidence::new(Level::Applied).commanded(Reading::Int(commanded.into()))))
}

fn set_theme(dev: &mut Device, args: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    dev.theme = if args.str("theme")? == "dark" {
        Theme::Dark
    } else {
        Theme::Light
    };
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Applied)))
}

fn reboot(dev: &mut Device, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    dev.reboot_scheduled = true;
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Scheduled)))
}

fn filler(_: &mut Device, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::text("This filler tool has no effect."))
}

const STATUS_SCHEMA: &str = concat!(
    r#"{"type":"object","properties":{"#,
    r#""audio_speaker":{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]},"#,
    r#""screen":{"type":"object","properties":{"brightness":{"type":"integer","minimum":0,"maximum":100},"#,
    r#""theme":{"type":"string","enum":["light","dark"]}},"required":["brightness","theme"]}},"#,
    r#""required":["audio_speaker","screen"]}"#
);

/// The device's tools, in listing order.
pub const TOOLS: [Tool<Device>; 5] = [
    Tool::new(
        "self.get_device_status",
        "Provides the real-time information of the device, including the current status of the audio speaker and screen. \
         Use this tool before adjusting the volume or brightness relative to the current value.",
        get_device_status,
    )
    .annotations(Annotations::new().read_only(true))
    .output_schema(STATUS_SCHEMA),
    Tool::new(
        "self.audio_speaker.set_volume",
        "Set the volume of the audio speaker. If the current volume is unknown, call self.get_device_status first.",
        set_volume,
    )
    .params(&[Param::integer("volume", "Volume in percent, 0 (silent) to 100 (loudest)").range(0, 100)])
    .annotations(Annotations::new().idempotent(true).destructive(false)),
    Tool::new("self.screen.set_brightness", "Set the brightness of the screen backlight.", set_brightness)
        .params(&[Param::integer("brightness", "Brightness in percent, 0 (off) to 100").range(0, 100)])
        .annotations(Annotations::new().idempotent(true).destructive(false)),
    Tool::new("self.screen.set_theme", "Set the theme of the screen.", set_theme)
        .params(&[Param::string("theme", "The theme of the screen").one_of(&["light", "dark"])])
        .annotations(Annotations::new().idempotent(true).destructive(false)),
    Tool::new("self.reboot", "Reboot the device. It goes offline for a few seconds.", reboot)
        .user_only()
        .annotations(Annotations::new().destructive(true)),
];

const FILLER_PARAMS: &[Param] = &[
    Param::integer("level", "Ignored")
        .range(0, 10)
        .default_int(0),
    Param::string("label", "Ignored").length(0, 32).optional(),
];

/// Filler tool `i` (about 300 bytes of listing), so that `tools/list` paging can be seen.
/// The tool is leaked: the simulator builds these once at start-up.
pub fn filler_tool(i: usize) -> &'static Tool<Device> {
    let name: &'static str = Box::leak(format!("self.extra.filler_{i:03}").into_boxed_str());
    Box::leak(Box::new(
        Tool::new(
            name,
            "Filler tool (device-sim --extra-tools); no effect.",
            filler,
        )
        .params(FILLER_PARAMS)
        .annotations(Annotations::new().read_only(true)),
    ))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn every_percentage_survives_the_register_round_trip() {
        for p in 0..=100u8 {
            assert_eq!(Codec::reg_to_percent(Codec::percent_to_reg(p)), p);
        }
        assert_eq!(Codec::percent_to_reg(100), 0xBF);
        assert_eq!(Codec::percent_to_reg(0), 0);
    }

    #[test]
    fn fillers_are_about_300_bytes() {
        let size = filler_tool(1).listing_size();
        assert!((250..=400).contains(&size), "{size}");
    }
}
