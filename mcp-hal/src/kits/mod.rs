//! Ready-made MCP tools over the device traits (to be filled in).
