//! xiaozhi WebSocket client mode (feature `xiaozhi`).
//!
//! Not implemented yet: the device would connect out to `XIAOZHI_URL`, send its hello with
//! `features.mcp` (`mcp_core::transport::xiaozhi::DEVICE_HELLO`) and answer the MCP payloads of
//! xiaozhi's envelope with `Server::handle` wrapped by `mcp_core::transport::xiaozhi::wrap`. What
//! is missing is a WebSocket client (HTTP upgrade, masked frames) over an embassy-net socket.
compile_error!("the xiaozhi client mode of esp32-wifi is not implemented yet (see README.md)");
