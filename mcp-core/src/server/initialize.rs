//! `initialize` (the legacy handshake) and `server/discover` (2026-07-28): the revision, the
//! client's capabilities, and what this server offers.

#[cfg(feature = "confirm")]
use super::ClientName;
use super::era::Era;
use super::params::members;
use super::respond::Respond;
#[cfg(feature = "modern")]
use super::respond::write_cache_hints;
use super::{Capacities, Event, Revision, Server, Vision};
#[cfg(feature = "modern")]
use super::{Config, MODERN_REVISION};
use crate::wire::json::Json;
use crate::wire::protocol;
use crate::wire::response::ErrorCode;
use crate::wire::writer::Writer;

impl<'t, C, K: Capacities> Server<'t, C, K> {
    /// Capabilities, as members of the `capabilities` object.
    pub(super) fn write_capabilities(&self, w: &mut Writer<'_>, era: Era<'_>) {
        let has_tasks = K::TASKS > 0 && self.registry.tools().any(|t| t.task_hooks().is_some());
        w.raw(protocol::TOOLS_AND_LOGGING);
        #[cfg(feature = "resources")]
        if self.has_live_resources() {
            w.raw(protocol::RESOURCES_SUBSCRIBE);
        } else if !self.config.resources.is_empty() {
            w.raw(protocol::RESOURCES);
        }
        #[cfg(feature = "resources")]
        if !self.config.prompts.is_empty() {
            w.raw(protocol::PROMPTS);
        }
        #[cfg(feature = "resources")]
        if self.completes() {
            w.raw(protocol::COMPLETIONS);
        }
        match era {
            Era::Modern(_) if has_tasks => w.raw(protocol::TASKS_EXTENSION),
            Era::Legacy if has_tasks && self.effective_revision() >= Revision::V2025_11_25 => {
                w.raw(protocol::TASKS);
            }
            _ => {}
        }
    }

    #[cfg(feature = "modern")]
    pub(super) fn discover(&mut self, respond: Respond<'_, '_>) -> usize {
        let era = respond.era;
        let config = &self.config;
        respond.result(|w| {
            w.raw(protocol::SUPPORTED_VERSIONS);
            write_supported_versions(w);
            w.raw(protocol::CAPABILITIES_OPEN);
            self.write_capabilities(w, era);
            w.raw(b"}");
            if let Some(text) = config.instructions {
                w.raw(protocol::INSTRUCTIONS);
                w.string(text);
            }
            write_cache_hints(w, config.list_ttl_ms);
        })
    }

    /// `initialize`: the revision, the client's capabilities, the server's answer. (Not inlined:
    /// its locals stay out of the dispatch's frame.)
    #[inline(never)]
    pub(super) fn initialize<'i>(
        &mut self,
        params: Option<Json<'i>>,
        respond: Respond<'_, 'i>,
        event: &mut Option<Event<'i>>,
    ) -> usize {
        // One walk of `params` and one of `capabilities` in the common case. A member given twice
        // makes that walk fail, and only then is each member read on its own, as before: a
        // repeated `clientInfo` leaves the client unnamed, a repeated capability undeclared, a
        // repeated `protocolVersion` or `capabilities` refuses the request.
        let (version, capabilities, client_info) =
            match members(params, ["protocolVersion", "capabilities", "clientInfo"]) {
                Ok([version, capabilities, client_info]) => {
                    (version, capabilities, Some(client_info))
                }
                Err(_) => match members(params, ["protocolVersion", "capabilities"]) {
                    Ok([version, capabilities]) => (version, capabilities, None),
                    Err(msg) => return respond.error_text(ErrorCode::InvalidParams, msg),
                },
            };
        let Some(version) = version.and_then(|v| v.as_str()) else {
            return respond.error_text(
                ErrorCode::InvalidParams,
                "Invalid params: initialize needs protocolVersion (a string)",
            );
        };
        // A legacy handshake never settles on 2026-07-28 (it has no handshake).
        let revision = Revision::parse(version).unwrap_or(Revision::LATEST);
        self.session.revision = Some(revision);
        let one = |name: &str| {
            capabilities
                .and_then(|c| members(Some(c), [name]).ok())
                .and_then(|[v]| v)
        };
        let [elicitation, tasks, vision] = capabilities
            .and_then(|c| members(Some(c), ["elicitation", "tasks", "vision"]).ok())
            .unwrap_or_else(|| ["elicitation", "tasks", "vision"].map(one));
        let declared = |c: Option<Json<'_>>| c.is_some_and(|c| c.members().is_some());
        // Elicitation (2025-06-18 on): a confirmation can be asked of the client's user.
        self.session.elicits = revision >= Revision::V2025_06_18 && declared(elicitation);
        // A client that follows tasks needs no answer held back for a long-running call.
        self.session.tasks = revision >= Revision::V2025_11_25 && declared(tasks);
        // Its name (its own claim), as a question a person is asked shows it and as a host
        // names the client of each call (`Server::client_label`).
        #[cfg(feature = "confirm")]
        {
            self.session.client = client_name(client_info.flatten());
        }
        #[cfg(not(feature = "confirm"))]
        let _ = client_info;
        let vision = members(vision, ["url", "token"])
            .ok()
            .and_then(|[url, token]| {
                Some(Vision {
                    url: url?.as_str()?,
                    token: token?.as_str()?,
                })
            });
        *event = Some(Event::Initialized { revision, vision });
        let config = &self.config;
        let era = respond.era;
        respond.result(|w| {
            w.raw(protocol::PROTOCOL_VERSION);
            w.string(revision.as_str());
            w.raw(protocol::CAPABILITIES_OPEN);
            self.write_capabilities(w, era);
            w.raw(protocol::SERVER_INFO_OPEN);
            w.string(config.name);
            w.raw(protocol::VERSION);
            w.string(config.version);
            w.raw(b"}");
            if let Some(text) = config.instructions {
                w.raw(protocol::INSTRUCTIONS);
                w.string(text);
            }
        })
    }
}

/// `clientInfo.name` of an `initialize` (its `clientInfo`), as a device shows it (none when
/// absent, not a string, or `clientInfo` or `name` is given twice).
#[cfg(feature = "confirm")]
fn client_name(client_info: Option<Json<'_>>) -> ClientName {
    let name = members(client_info, ["name"])
        .ok()
        .and_then(|[name]| name?.as_str());
    name.map_or(ClientName::NONE, ClientName::new)
}

/// The most bytes the 2026-07-28 members add to a `tools/list` result: `resultType`, the server
/// identity (each character escaped at most 6 bytes long) and the caching hints.
#[cfg(feature = "modern")]
pub(crate) const fn modern_reserve(config: &Config) -> usize {
    // `,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"",
    // "version":""}},"ttlMs":4294967295,"cacheScope":"public"`, without the name and version.
    const FIXED: usize = protocol::joined_len(&[
        protocol::RESULT_TYPE,
        br#""complete""#,
        protocol::SERVER_INFO_META_OPEN,
        br#""""#,
        protocol::VERSION,
        br#"""}}"#,
        protocol::TTL_MS,
        b"4294967295",
        protocol::CACHE_SCOPE_PUBLIC,
    ]);
    FIXED + 6 * (config.name.len() + config.version.len())
}

/// `["2026-07-28","2025-11-25",…]`: every revision this engine speaks, newest first.
#[cfg(feature = "modern")]
pub(super) fn write_supported_versions(w: &mut Writer<'_>) {
    w.raw(br#"[""#);
    w.raw(MODERN_REVISION.as_bytes());
    for r in Revision::ALL.iter().rev() {
        w.raw(br#"",""#);
        w.raw(r.as_str().as_bytes());
    }
    w.raw(br#""]"#);
}
