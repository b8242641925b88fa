//! The vocabulary of long-running tools: what their hooks report ([`TaskPoll`]), what the engine
//! tells them ([`TaskInfo`]), and the read-only view of a task a status tool gets
//! ([`TaskSnapshot`] through [`TaskLookup`]).

use core::fmt;

use super::{Evidence, ToolError, ToolResult};

/// Progress of a task, as `notifications/progress` reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Progress {
    /// Progress so far; increases as work is done.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
}

/// What a long-running tool's [`TaskHooks::poll`] reports.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum TaskPoll {
    /// Still running.
    Working(Option<Progress>),
    /// Finished: the final result, as the tool call would have returned it. Use values without
    /// scratch text (`Output::bool/int/number/text`, `ToolError::new`) plus evidence: the result
    /// is kept in the task table until the task expires.
    Done(ToolResult),
    /// Finished without a tool result: the request itself failed (a JSON-RPC -32603 error with
    /// this message), as opposed to a tool failure (`Done(Err(..))`, `isError: true`).
    Error(&'static str),
}

/// What the engine tells a long-running tool's hooks about its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The word the handler returned in [`Output::task`](super::Output::task).
    pub data: i64,
    /// When the task started (caller's clock, ms).
    pub started_ms: u64,
    /// Now (caller's clock, ms).
    pub now_ms: u64,
}

/// A long-running tool's safe-stop (see [`TaskHooks::stop`]).
pub type StopHook<C> = fn(&mut C, &TaskInfo) -> Result<(), ToolError>;

/// The hooks through which the engine drives a long-running tool.
pub struct TaskHooks<C> {
    /// Reads the device's progress; called from [`Server::poll`](crate::Server::poll).
    pub poll: fn(&mut C, &TaskInfo) -> TaskPoll,
    /// The safe-stop, for actions that can be stopped (a motor; not a codec write): called once,
    /// on `tasks/cancel`, on timeout, and after a failure ([`TaskPoll::Done`] with `Err`, or
    /// [`TaskPoll::Error`]). `Ok` means the stop was issued. Every form of the outcome says what
    /// became of it after the failure message (`…; safe-stop issued`, or `safe-stop FAILED`): the
    /// `tasks/get` status message, `tasks/result`, the 2026-07-28 `tasks/get` result or error,
    /// and the status tool's `error` (plus its `stop` member).
    pub stop: Option<StopHook<C>>,
    /// How long the action may run before the engine stops it and fails the task.
    pub timeout_ms: u32,
}

impl<C> Clone for TaskHooks<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for TaskHooks<C> {}

impl<C> fmt::Debug for TaskHooks<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHooks")
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

/// The status of a task, as the table keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Finished with a result (no `isError`).
    Completed,
    /// Finished with a failure (`isError: true`), including timeouts. The 2026-07-28 extension
    /// reports these as `completed` with an `isError` result.
    Failed,
    /// Cancelled by request; the safe-stop was called.
    Cancelled,
}

impl TaskStatus {
    /// The wire name (2025-11-25 and the status tool).
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// `true` for completed, failed and cancelled.
    pub const fn is_terminal(self) -> bool {
        !matches!(self, TaskStatus::Working)
    }
}

/// A read-only view of one task, for status tools.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct TaskSnapshot {
    /// The tool that started it.
    pub tool: &'static str,
    /// Its status.
    pub status: TaskStatus,
    /// The latest progress reported.
    pub progress: Option<Progress>,
    /// The evidence reported when it started.
    pub started: Evidence,
    /// The final result, once terminal.
    pub outcome: Option<ToolResult>,
    /// The JSON-RPC error message, when the task ended with one instead of a result.
    pub error: Option<&'static str>,
    /// Whether the safe-stop was called and how it went (`Ok`: issued).
    pub stop: Option<Result<(), ToolError>>,
}

/// Looks tasks up by id; implemented by the server's task table and handed to handlers through
/// [`Reply::task`](super::Reply::task).
pub trait TaskLookup {
    /// The task with this id (`task-…`), if it exists: lent, not copied (a snapshot is some
    /// 250 bytes, which a status tool would otherwise hold on the stack under its handler).
    fn snapshot(&self, id: &str) -> Option<&TaskSnapshot>;
}
