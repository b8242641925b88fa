//! `resources/list`, `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get`
//! over the static items of [`Config`](super::Config).

use super::{Respond, Server, members, write_cache_hints};
use crate::wire::json::Json;
use crate::wire::response::ErrorCode;

impl<C, const N: usize, const TASKS: usize, const CACHE: usize, const CACHE_BYTES: usize>
    Server<'_, C, N, TASKS, CACHE, CACHE_BYTES>
{
    pub(super) fn resources(
        &self,
        method: &str,
        params: Option<Json<'_>>,
        respond: Respond<'_, '_>,
    ) -> usize {
        let config = self.config;
        let modern = respond.era.is_modern();
        let hints = |w: &mut crate::wire::Writer<'_>| {
            if modern {
                write_cache_hints(w, &config);
            }
        };
        match method {
            "resources/list" => respond.result(|w| {
                w.raw(b"\"resources\":[");
                for (i, r) in config.resources.iter().enumerate() {
                    w.raw(if i > 0 { b",{\"uri\":" } else { b"{\"uri\":" });
                    w.string(r.uri());
                    w.raw(b",\"name\":");
                    w.string(r.name());
                    if let Some(d) = r.describe() {
                        w.raw(b",\"description\":");
                        w.string(d);
                    }
                    w.raw(b",\"mimeType\":");
                    w.string(r.mime_type());
                    w.raw(b"}");
                }
                w.raw(b"]");
                hints(w);
            }),
            "resources/templates/list" => respond.result(|w| {
                w.raw(b"\"resourceTemplates\":[]");
                hints(w);
            }),
            "resources/read" => {
                let uri = members(params, ["uri"])
                    .ok()
                    .and_then(|[u]| u)
                    .and_then(|u| u.as_str());
                let Some(r) = uri.and_then(|u| config.resources.iter().find(|r| u.eq_str(r.uri())))
                else {
                    // 2026-07-28 made resource-not-found a plain invalid-params error.
                    let code = if modern {
                        ErrorCode::InvalidParams
                    } else {
                        ErrorCode::ResourceNotFound
                    };
                    return respond.error(code, |w| w.text("Resource not found"));
                };
                respond.result(|w| {
                    w.raw(b"\"contents\":[{\"uri\":");
                    w.string(r.uri());
                    w.raw(b",\"mimeType\":");
                    w.string(r.mime_type());
                    w.raw(b",\"text\":");
                    w.string(r.text());
                    w.raw(b"}]");
                    hints(w);
                })
            }
            "prompts/list" => respond.result(|w| {
                w.raw(b"\"prompts\":[");
                for (i, p) in config.prompts.iter().enumerate() {
                    w.raw(if i > 0 { b",{\"name\":" } else { b"{\"name\":" });
                    w.string(p.name());
                    w.raw(b",\"description\":");
                    w.string(p.describe());
                    w.raw(b"}");
                }
                w.raw(b"]");
                hints(w);
            }),
            _ => {
                // prompts/get
                let name = members(params, ["name"])
                    .ok()
                    .and_then(|[n]| n)
                    .and_then(|n| n.as_str());
                let Some(p) = name.and_then(|n| config.prompts.iter().find(|p| n.eq_str(p.name())))
                else {
                    return respond.error(ErrorCode::InvalidParams, |w| {
                        w.text("Invalid params: unknown prompt")
                    });
                };
                respond.result(|w| {
                    w.raw(b"\"description\":");
                    w.string(p.describe());
                    w.raw(b",\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":");
                    w.string(p.text());
                    w.raw(b"}}]");
                })
            }
        }
    }
}
