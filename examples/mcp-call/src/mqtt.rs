//! `mqtt(s)://[USER:PASSWORD@]BROKER:PORT[/DEVICE]`: MCP over MQTT through `mqtt_fleet::Client`.

use std::io::Write;
use std::time::Duration;

use mcp_core::transport::escape::escaped;
use mqtt_fleet::Client;
use mqtt_fleet::client::Unclaimed;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::Settings;

/// How long presences may keep coming once the first device is seen (retained messages follow
/// the subscription at once).
const MORE_DEVICES: Duration = Duration::from_millis(500);

pub(crate) struct Mqtt {
    client: Client,
    device: String,
    inbox: mpsc::UnboundedReceiver<Unclaimed>,
}

/// The broker URL and the device the target names: `…/DEVICE` after the authority (the user
/// info may hold a `/`: it ends at the last `@`).
fn split_target(target: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = target.split_once("://") else {
        return (target.to_string(), None);
    };
    let (info, hostpath) = match rest.rsplit_once('@') {
        Some((info, hp)) => (Some(info), hp),
        None => (None, rest),
    };
    let (host, device) = match hostpath.split_once('/') {
        Some((h, d)) => (h, Some(d.trim_end_matches('/')).filter(|d| !d.is_empty())),
        None => (hostpath, None),
    };
    let broker = match info {
        Some(info) => format!("{scheme}://{info}@{host}"),
        None => format!("{scheme}://{host}"),
    };
    (broker, device.map(str::to_string))
}

impl Mqtt {
    /// Connects, finds the device (the one named, or the only one online), and listens.
    pub(crate) async fn open(
        target: &str,
        settings: &Settings,
        err: &mut (dyn Write + Send),
    ) -> Result<Mqtt, String> {
        let (broker, named) = split_target(target);
        let id = format!("mcp-call-{}", crate::random_hex(6)?);
        let client = Client::connect_with(&broker, &id, &settings.tls)?;
        let shown = mcp_host::mqtt::redacted(&broker);
        // Why nothing came, when the link itself is down.
        let why = |client: &Client| match client.link_error() {
            Some(e) => format!("; the broker link: {}", escaped(&e).max_chars(512)),
            None => String::new(),
        };
        let device = match named {
            Some(device) => {
                let online = |d: &std::collections::BTreeMap<String, mqtt_fleet::Presence>| {
                    d.get(&device).is_some_and(|p| p.online)
                };
                if !client.wait_until(settings.timeout, online).await {
                    return Err(format!(
                        "{} is not online at {} (within {} s){}",
                        escaped(&device),
                        escaped(&shown),
                        settings.timeout.as_secs(),
                        why(&client)
                    ));
                }
                device
            }
            None => {
                if !client.wait_for_online(1, settings.timeout).await {
                    return Err(format!(
                        "no device online at {} (within {} s){}",
                        escaped(&shown),
                        settings.timeout.as_secs(),
                        why(&client)
                    ));
                }
                tokio::time::sleep(MORE_DEVICES).await;
                let online: Vec<String> = client
                    .devices()
                    .into_iter()
                    .filter(|(_, p)| p.online)
                    .map(|(id, _)| id)
                    .collect();
                match online.as_slice() {
                    [one] => {
                        let _ = writeln!(err, "mcp-call: the one device online: {}", escaped(one));
                        one.clone()
                    }
                    many => {
                        let names: Vec<String> =
                            many.iter().map(|d| escaped(d).to_string()).collect();
                        return Err(format!(
                            "{} devices online at {}: name one, {}/DEVICE ({})",
                            many.len(),
                            escaped(&shown),
                            escaped(&shown),
                            names.join(", ")
                        ));
                    }
                }
            }
        };
        let inbox = client.inbox();
        Ok(Mqtt {
            client,
            device,
            inbox,
        })
    }

    /// `initialize` goes on the device's control topic, everything else on this client's RPC
    /// topic with it.
    pub(crate) async fn send(&mut self, msg: &Value) -> Result<(), String> {
        let text = msg.to_string();
        let sent = if msg.get("method").and_then(Value::as_str) == Some("initialize") {
            self.client.send_control(&self.device, text).await
        } else {
            self.client.send(&self.device, text).await
        };
        sent.map_err(|e| format!("MQTT: {e}"))
    }

    pub(crate) async fn recv(&mut self) -> Option<Result<Value, String>> {
        loop {
            let (device, msg) = self.inbox.recv().await?;
            if device == self.device {
                return Some(Ok(msg));
            }
        }
    }

    /// Says goodbye on the client's presence topic (the device ends the session) and
    /// disconnects.
    pub(crate) async fn close(self) {
        self.client.close().await;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_device_follows_the_authority_and_a_password_may_hold_a_slash() {
        assert_eq!(
            split_target("mqtt://127.0.0.1:1883/dev-1"),
            ("mqtt://127.0.0.1:1883".into(), Some("dev-1".into()))
        );
        assert_eq!(
            split_target("mqtts://u:p/w@broker:8883/dev-1/"),
            ("mqtts://u:p/w@broker:8883".into(), Some("dev-1".into()))
        );
        assert_eq!(
            split_target("mqtt://broker:1883"),
            ("mqtt://broker:1883".into(), None)
        );
        assert_eq!(
            split_target("mqtt://broker:1883/"),
            ("mqtt://broker:1883".into(), None)
        );
    }
}
