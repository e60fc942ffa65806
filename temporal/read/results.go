package read

import (
	"time"

	"github.com/porthole-dev/porthole/redact/quote"
)

// Observation says what a result is about and when it was read. Every result
// embeds it.
//
// Every string field carries its disclosure class in a `disclose` tag
// (see Class): docs/disclosure.md is generated from these types, and a
// test keeps it in step.
type Observation struct {
	Namespace  string    `json:"namespace" jsonschema:"the Temporal namespace this answer is about" disclose:"porthole,name"`
	ObservedAt time.Time `json:"observedAt" jsonschema:"when porthole read this from Temporal"`
	// AgeSeconds is set when the answer came from porthole's short-lived
	// cache: how old it was when served.
	AgeSeconds *float64 `json:"ageSeconds,omitempty" jsonschema:"present when this answer came from porthole's cache: its age in seconds"`
	// Withheld names the classes of field the caller's disclosure profile
	// withheld from this answer: a field of one of them is absent because
	// it was withheld, not because Temporal had nothing to say.
	Withheld []Class `json:"withheld,omitempty" jsonschema:"the classes of field withheld from this answer by your disclosure profile; a field of one of them is absent because it was withheld" disclose:"porthole,class"`
	// Pseudonymised names the classes of field whose values this answer
	// shows as pseudonyms: give a pseudonym back as an argument, and
	// porthole reads the value it stands for.
	Pseudonymised []Class `json:"pseudonymised,omitempty" jsonschema:"the classes of field this answer shows as pseudonyms (ps...); pass a pseudonym back as an argument or in a query's = or IN, and porthole reads what it stands for" disclose:"porthole,class"`
}

// Observed returns the observation; every result has it by embedding, so
// code that stamps or checks observations can treat all results alike.
func (o *Observation) Observed() *Observation { return o }

// WorkflowStatus is a workflow execution's status as Temporal names it, for
// example Running, Completed, Failed, Canceled, Terminated, ContinuedAsNew,
// TimedOut.
type WorkflowStatus string

// WorkflowSummary is one workflow execution, identifiers and times only.
type WorkflowSummary struct {
	WorkflowID    string         `json:"workflowId,omitzero" disclose:"workflow-id"`
	RunID         string         `json:"runId,omitzero" disclose:"run-id"`
	WorkflowType  string         `json:"workflowType,omitzero" disclose:"type-name"`
	TaskQueue     string         `json:"taskQueue,omitzero" disclose:"task-queue"`
	Status        WorkflowStatus `json:"status" disclose:"enum"`
	StartTime     *time.Time     `json:"startTime,omitempty"`
	ExecutionTime *time.Time     `json:"executionTime,omitempty"`
	CloseTime     *time.Time     `json:"closeTime,omitempty"`
	HistoryLength int64          `json:"historyLength"`
	// ParentWorkflowID and ParentRunID name the parent of a child workflow.
	ParentWorkflowID string `json:"parentWorkflowId,omitempty" disclose:"workflow-id"`
	ParentRunID      string `json:"parentRunId,omitempty" disclose:"run-id"`
}

// WorkflowList is one page of workflow executions.
type WorkflowList struct {
	Observation
	Workflows     []WorkflowSummary `json:"workflows" jsonschema:"the executions on this page; empty when none matched"`
	NextPageToken string            `json:"nextPageToken,omitempty" jsonschema:"pass back to read the next page; absent on the last page" disclose:"porthole,token"`
}

// WorkflowCount is how many executions matched a query.
type WorkflowCount struct {
	Observation
	Count int64 `json:"count"`
}

// ActivityState is a pending activity's state as Temporal names it, for
// example Scheduled, Started, CancelRequested, Paused.
type ActivityState string

// Failure is the readable part of one failure: its message, quoted, and the
// kind of failure. Details and stack traces are never read.
type Failure struct {
	Message quote.Text `json:"message,omitzero" disclose:"free-text"`
	// Kind is the failure's category: application, timeout, canceled,
	// terminated, server, activity, child workflow, nexus operation, nexus
	// handler, reset workflow, or unknown.
	Kind string `json:"kind" disclose:"enum"`
	// ApplicationErrorType is the error type an application failure names.
	ApplicationErrorType string `json:"applicationErrorType,omitempty" disclose:"type-name"`
	NonRetryable         bool   `json:"nonRetryable,omitempty"`
	// TimeoutType is, for a timeout, which timeout ran out (StartToClose,
	// ScheduleToStart, ScheduleToClose, Heartbeat).
	TimeoutType string `json:"timeoutType,omitempty" disclose:"enum"`
}

// MaxFailureCauses is how deep a failure's chain of causes is read.
const MaxFailureCauses = 5

// FailureSummary is a failure and the chain of its causes, each read as
// the failure itself is. The chain is a flat list: a failure type that
// held its own cause would be a schema without end.
type FailureSummary struct {
	Failure
	Causes []Failure `json:"causes,omitempty" jsonschema:"the failure's causes, outermost first, at most 5"`
	// MoreCauses counts the causes that were not read: past the fifth, or
	// past the answer's failure text.
	MoreCauses int `json:"moreCauses,omitempty" jsonschema:"how many causes were left out"`
}

// PendingActivity is an activity that has been scheduled and not finished.
type PendingActivity struct {
	ActivityID              string          `json:"activityId,omitzero" disclose:"activity-id"`
	ActivityType            string          `json:"activityType,omitzero" disclose:"type-name"`
	State                   ActivityState   `json:"state" disclose:"enum"`
	Attempt                 int32           `json:"attempt"`
	MaximumAttempts         int32           `json:"maximumAttempts" jsonschema:"0 means unlimited"`
	ScheduledTime           *time.Time      `json:"scheduledTime,omitempty"`
	LastStartedTime         *time.Time      `json:"lastStartedTime,omitempty"`
	LastHeartbeatTime       *time.Time      `json:"lastHeartbeatTime,omitempty"`
	NextAttemptScheduleTime *time.Time      `json:"nextAttemptScheduleTime,omitempty"`
	ExpirationTime          *time.Time      `json:"expirationTime,omitempty"`
	LastFailure             *FailureSummary `json:"lastFailure,omitempty"`
	LastWorkerIdentity      *quote.Text     `json:"lastWorkerIdentity,omitempty" disclose:"worker-identity"`
	Paused                  bool            `json:"paused,omitempty"`
}

// PendingChild is a child workflow that has been started and not closed.
type PendingChild struct {
	WorkflowID   string `json:"workflowId,omitzero" disclose:"workflow-id"`
	RunID        string `json:"runId,omitzero" disclose:"run-id"`
	WorkflowType string `json:"workflowType,omitzero" disclose:"type-name"`
	InitiatedID  int64  `json:"initiatedEventId"`
}

// WorkflowDescription is one execution with what it is waiting on.
type WorkflowDescription struct {
	Observation
	Workflow                 WorkflowSummary   `json:"workflow"`
	ExecutionDurationSeconds float64           `json:"executionDurationSeconds,omitempty" jsonschema:"close time minus execution time, for closed executions"`
	PendingActivities        []PendingActivity `json:"pendingActivities"`
	PendingChildren          []PendingChild    `json:"pendingChildren"`
	// PendingNexusOperations are the Nexus operations the workflow
	// scheduled that have not completed, at most MaxPendingListed; the
	// rest are counted.
	PendingNexusOperations     []PendingNexusOperation `json:"pendingNexusOperations"`
	MorePendingNexusOperations int                     `json:"morePendingNexusOperations,omitempty" jsonschema:"how many more pending Nexus operations were left out"`
	// Callbacks are the callbacks attached to the workflow (a Nexus
	// caller's completion callback), at most MaxPendingListed.
	Callbacks     []Callback `json:"callbacks"`
	MoreCallbacks int        `json:"moreCallbacks,omitempty" jsonschema:"how many more callbacks were left out"`
	// CloseFailure is why a failed workflow failed: the failure of its
	// close event.
	CloseFailure *FailureSummary `json:"closeFailure,omitempty" jsonschema:"for a failed workflow, the failure it closed with"`
	// TimedOut says, for a timed-out workflow, which of its timeouts ran
	// out.
	TimedOut *WorkflowTimeout `json:"timedOut,omitempty" jsonschema:"for a timed-out workflow, which timeout ran out"`
	// FailuresLeftOut counts the failure summaries not read past the
	// description's failure text (MaxFailureText).
	FailuresLeftOut int `json:"failuresLeftOut,omitempty" jsonschema:"failure summaries left out: the answer's failure text was used up"`
}

// MaxPendingListed bounds the pending Nexus operations and the callbacks a
// description lists.
const MaxPendingListed = 50

// PendingNexusOperation is a Nexus operation a workflow scheduled that has
// not completed. Its input, headers, operation token and callback URL are
// never read.
type PendingNexusOperation struct {
	Endpoint                string          `json:"endpoint,omitzero" disclose:"nexus-name"`
	Service                 string          `json:"service,omitzero" disclose:"nexus-name"`
	Operation               string          `json:"operation,omitzero" disclose:"nexus-name"`
	State                   string          `json:"state" disclose:"enum"`
	ScheduledEventID        int64           `json:"scheduledEventId"`
	ScheduledTime           *time.Time      `json:"scheduledTime,omitempty"`
	Attempt                 int32           `json:"attempt"`
	LastAttemptCompleteTime *time.Time      `json:"lastAttemptCompleteTime,omitempty"`
	NextAttemptScheduleTime *time.Time      `json:"nextAttemptScheduleTime,omitempty"`
	LastAttemptFailure      *FailureSummary `json:"lastAttemptFailure,omitempty"`
	BlockedReason           *quote.Text     `json:"blockedReason,omitempty" disclose:"free-text"`
}

// Callback is a callback attached to a workflow: Temporal calls it when
// its trigger fires (a Nexus caller learns that the operation's workflow
// closed). Its URL and headers are never read, nor its last failure's
// words or blocked reason, which quote the URL.
type Callback struct {
	// Trigger is what fires it: WorkflowClosed, or unknown.
	Trigger                 string     `json:"trigger" disclose:"enum"`
	State                   string     `json:"state" disclose:"enum"`
	RegistrationTime        *time.Time `json:"registrationTime,omitempty"`
	Attempt                 int32      `json:"attempt"`
	LastAttemptCompleteTime *time.Time `json:"lastAttemptCompleteTime,omitempty"`
	NextAttemptScheduleTime *time.Time `json:"nextAttemptScheduleTime,omitempty"`
	LastAttemptFailed       bool       `json:"lastAttemptFailed,omitempty"`
}

// WorkflowTimeout is which of a timed-out workflow's timeouts ran out.
// Temporal's close event names none, so porthole tells it from the
// expiration times Temporal reports for the run: the execution's when the
// close came at or after it, else the run's. Where Temporal reports
// neither, from the configured timeouts: the execution timeout when the
// run timeout is unset or not shorter (Temporal sets an unset run timeout
// to the execution timeout), the run timeout when the run lasted it, else
// the execution timeout.
type WorkflowTimeout struct {
	// Which is "execution", "run", or "unknown" when neither is set.
	Which                   string  `json:"which" disclose:"enum"`
	ExecutionTimeoutSeconds float64 `json:"executionTimeoutSeconds,omitempty"`
	RunTimeoutSeconds       float64 `json:"runTimeoutSeconds,omitempty"`
}

// HistoryEvent is one event of a workflow's history: its id, type and time,
// and the identifiers that say what it is about. Event attributes that carry
// payloads or free text are never read.
type HistoryEvent struct {
	EventID           int64     `json:"eventId"`
	EventType         string    `json:"eventType" disclose:"enum"`
	EventTime         time.Time `json:"eventTime"`
	ActivityID        string    `json:"activityId,omitempty" disclose:"activity-id"`
	ActivityType      string    `json:"activityType,omitempty" disclose:"type-name"`
	TimerID           string    `json:"timerId,omitempty" disclose:"timer-id"`
	ChildWorkflowID   string    `json:"childWorkflowId,omitempty" disclose:"workflow-id"`
	ChildWorkflowType string    `json:"childWorkflowType,omitempty" disclose:"type-name"`
	ScheduledEventID  int64     `json:"scheduledEventId,omitempty" jsonschema:"for activity events, the event that scheduled the activity"`
	Attempt           int32     `json:"attempt,omitempty"`
	// Failure is the failure of a failed activity, workflow task, child
	// workflow, Nexus operation or workflow, and of a timed-out activity
	// or Nexus operation. Within one page, failure text is bounded
	// (MaxFailureText).
	Failure *FailureSummary `json:"failure,omitempty"`
	// TimeoutType is which timeout ran out, on a timeout event that names
	// it (activity, workflow task).
	TimeoutType string `json:"timeoutType,omitempty" disclose:"enum"`
}

// MaxFailureText bounds the failure summaries of one answer (a history
// page, a workflow's description), in bytes of their strings as JSON
// escapes them plus a fixed charge each: past it, failures are counted,
// not read. 500 events that each failed with a 1 KiB message and five
// causes would otherwise be 3 MiB of text, six times that escaped
// (TestAHistoryPageOfFailuresIsBounded holds the bound).
const MaxFailureText = 64 << 10

// History is one page of a workflow's event history.
type History struct {
	Observation
	WorkflowID    string         `json:"workflowId,omitzero" disclose:"workflow-id"`
	RunID         string         `json:"runId,omitempty" disclose:"run-id"`
	Events        []HistoryEvent `json:"events"`
	NextPageToken string         `json:"nextPageToken,omitempty" disclose:"porthole,token"`
	// FailuresLeftOut counts the failure summaries not read past the
	// page's failure text (MaxFailureText).
	FailuresLeftOut int `json:"failuresLeftOut,omitempty" jsonschema:"failure summaries left out: the page's failure text was used up; read fewer events a page"`
}

// Poller is a worker that polled a task queue recently.
type Poller struct {
	Identity       quote.Text `json:"identity,omitzero" disclose:"worker-identity"`
	LastAccessTime *time.Time `json:"lastAccessTime,omitempty"`
	RatePerSecond  float64    `json:"ratePerSecond"`
	// DeploymentName and BuildID name the worker deployment version a
	// versioned worker polls as.
	DeploymentName string `json:"deploymentName,omitempty" disclose:"deployment"`
	BuildID        string `json:"buildId,omitempty" disclose:"deployment"`
}

// TaskQueueBacklog is what Temporal reports of a task queue's backlog.
type TaskQueueBacklog struct {
	ApproximateBacklogCount      int64   `json:"approximateBacklogCount"`
	ApproximateBacklogAgeSeconds float64 `json:"approximateBacklogAgeSeconds"`
	TasksAddRate                 float64 `json:"tasksAddRate"`
	TasksDispatchRate            float64 `json:"tasksDispatchRate"`
}

// TaskQueuePart is one type of a task queue (workflow or activity tasks).
type TaskQueuePart struct {
	Pollers []Poller          `json:"pollers" jsonschema:"workers that polled recently; empty when none did"`
	Backlog *TaskQueueBacklog `json:"backlog,omitempty"`
}

// TaskQueueDescription is a task queue's pollers and backlog, for workflow
// tasks and for activity tasks, and where it routes new work when it is
// versioned.
type TaskQueueDescription struct {
	Observation
	TaskQueue  string               `json:"taskQueue,omitzero" disclose:"task-queue"`
	Workflow   TaskQueuePart        `json:"workflowTasks"`
	Activity   TaskQueuePart        `json:"activityTasks"`
	Versioning *TaskQueueVersioning `json:"versioning,omitempty" jsonschema:"the worker deployment versions the task queue routes to, when it is versioned"`
}

// TaskQueueVersioning is where a versioned task queue sends new work: the
// current version of its worker deployment and the one ramping.
type TaskQueueVersioning struct {
	DeploymentName string `json:"deploymentName,omitempty" disclose:"deployment"`
	Routes
	UpdateTime *time.Time `json:"updateTime,omitempty"`
}

// ScheduleAction is one workflow a schedule started.
type ScheduleAction struct {
	ScheduleTime *time.Time `json:"scheduleTime,omitempty"`
	ActualTime   *time.Time `json:"actualTime,omitempty"`
	WorkflowID   string     `json:"workflowId,omitzero" disclose:"workflow-id"`
	RunID        string     `json:"runId,omitzero" disclose:"run-id"`
}

// ScheduleSummary is one schedule as the list shows it.
type ScheduleSummary struct {
	ScheduleID      string           `json:"scheduleId,omitzero" disclose:"schedule-id"`
	WorkflowType    string           `json:"workflowType,omitempty" disclose:"type-name"`
	Paused          bool             `json:"paused"`
	Notes           *quote.Text      `json:"notes,omitempty" disclose:"free-text"`
	RecentActions   []ScheduleAction `json:"recentActions"`
	NextActionTimes []time.Time      `json:"nextActionTimes"`
}

// ScheduleList is one page of schedules.
type ScheduleList struct {
	Observation
	Schedules     []ScheduleSummary `json:"schedules"`
	NextPageToken string            `json:"nextPageToken,omitempty" disclose:"porthole,token"`
}

// ScheduleInterval is an "every" rule of a schedule's spec.
type ScheduleInterval struct {
	EverySeconds  float64 `json:"everySeconds"`
	OffsetSeconds float64 `json:"offsetSeconds,omitempty"`
}

// ScheduleDescription is one schedule: when it runs, what workflow type it
// starts, and what it did lately. The action's arguments, memo, headers and
// search attributes are never read.
type ScheduleDescription struct {
	Observation
	ScheduleID           string             `json:"scheduleId,omitzero" disclose:"schedule-id"`
	WorkflowType         string             `json:"workflowType,omitempty" disclose:"type-name"`
	WorkflowIDPrefix     string             `json:"workflowId,omitempty" jsonschema:"the workflow id the schedule starts runs with (Temporal appends the time)" disclose:"workflow-id"`
	TaskQueue            string             `json:"taskQueue,omitempty" disclose:"task-queue"`
	Paused               bool               `json:"paused"`
	Notes                *quote.Text        `json:"notes,omitempty" disclose:"free-text"`
	Intervals            []ScheduleInterval `json:"intervals"`
	CronExpressions      []string           `json:"cronExpressions,omitzero" disclose:"schedule-spec"`
	CalendarCount        int                `json:"calendarRules" jsonschema:"how many calendar rules the spec has"`
	OverlapPolicy        string             `json:"overlapPolicy,omitempty" disclose:"enum"`
	CatchupWindowSeconds float64            `json:"catchupWindowSeconds,omitempty"`
	ActionCount          int64              `json:"actionCount"`
	MissedCatchupWindow  int64              `json:"missedCatchupWindow"`
	OverlapSkipped       int64              `json:"overlapSkipped"`
	RunningWorkflows     []ScheduleAction   `json:"runningWorkflows"`
	RecentActions        []ScheduleAction   `json:"recentActions"`
	NextActionTimes      []time.Time        `json:"nextActionTimes"`
	CreateTime           *time.Time         `json:"createTime,omitempty"`
	UpdateTime           *time.Time         `json:"updateTime,omitempty"`
}

// NamespaceDescription is the namespace's state and retention. Its
// description, owner email and data are never read.
type NamespaceDescription struct {
	Observation
	State                   string  `json:"state" disclose:"enum"`
	RetentionSeconds        float64 `json:"retentionSeconds"`
	IsGlobalNamespace       bool    `json:"isGlobalNamespace"`
	ActiveCluster           string  `json:"activeCluster,omitempty" disclose:"cluster"`
	HistoryArchivalState    string  `json:"historyArchivalState,omitempty" disclose:"enum"`
	VisibilityArchivalState string  `json:"visibilityArchivalState,omitempty" disclose:"enum"`
	ServerVersion           string  `json:"serverVersion,omitempty" disclose:"version"`
}

// SearchAttribute is one search attribute of the namespace: its name and
// type, never a value.
type SearchAttribute struct {
	Name string `json:"name,omitzero" disclose:"search-attribute"`
	// Type is the attribute's indexed value type (Keyword, Text, Int,
	// Double, Bool, Datetime, KeywordList); absent when Temporal did not
	// say.
	Type   string `json:"type,omitempty" disclose:"enum"`
	System bool   `json:"system" jsonschema:"a system attribute every namespace has; false for a custom attribute"`
	// AllowedInQueries is set by the gateway from the query rules in force
	// at the time of the call: whether porthole's query screen lets a
	// visibility query name this attribute.
	AllowedInQueries bool `json:"allowedInQueries" jsonschema:"whether porthole lets a query (list_workflows, count_workflows) name this attribute"`
	// Source says where the entry came from: "temporal" when Temporal
	// listed it, "porthole" when Temporal refused the list and the entry
	// is one porthole itself knows (its system attributes, the custom
	// attributes the operator allowed).
	Source string `json:"source" jsonschema:"temporal when Temporal listed it; porthole when Temporal refused the list and porthole named it from its own configuration" disclose:"enum"`
}

// SearchAttributeList is the namespace's search attributes, system and
// custom, sorted by name.
type SearchAttributeList struct {
	Observation
	Attributes []SearchAttribute `json:"attributes"`
	// Complete is false when Temporal refused to list the attributes and
	// the list holds only what porthole knows; Note then says so.
	Complete bool        `json:"complete" jsonschema:"false when Temporal refused the list and only the attributes porthole knows are shown"`
	Note     *quote.Text `json:"note,omitempty" disclose:"porthole"`
}

// BatchOperationSummary is one batch operation as the list shows it.
type BatchOperationSummary struct {
	JobID string `json:"jobId,omitzero" disclose:"batch-job-id"`
	// OperationType is what the batch does to each workflow, as the server
	// names it: Terminate, Cancel, Signal, Delete, Reset, ... (newer
	// servers: TerminateWorkflow, SignalWorkflow, ...); absent when the
	// server did not say.
	OperationType string     `json:"operationType,omitempty" disclose:"enum"`
	State         string     `json:"state" disclose:"enum"`
	StartTime     *time.Time `json:"startTime,omitempty"`
	CloseTime     *time.Time `json:"closeTime,omitempty"`
}

// BatchOperationList is one page of batch operations. Temporal's list
// carries no counts, identity or reason: describe_batch_operation has them.
type BatchOperationList struct {
	Observation
	BatchOperations []BatchOperationSummary `json:"batchOperations"`
	NextPageToken   string                  `json:"nextPageToken,omitempty" disclose:"porthole,token"`
}

// BatchOperationDescription is one batch operation: what it does, how far
// it got, and who started it why. Its visibility query (which can name
// search-attribute values) and its list of executions are never read.
type BatchOperationDescription struct {
	Observation
	BatchOperationSummary
	TotalOperationCount    int64       `json:"totalOperationCount"`
	CompleteOperationCount int64       `json:"completeOperationCount"`
	FailureOperationCount  int64       `json:"failureOperationCount"`
	Identity               *quote.Text `json:"identity,omitempty" disclose:"worker-identity"`
	Reason                 *quote.Text `json:"reason,omitempty" disclose:"free-text"`
}

// Routes are where new work goes: the current version, and a version
// ramping with a share of it. Either can be unversioned workers.
type Routes struct {
	CurrentBuildID string `json:"currentBuildId,omitempty" jsonschema:"the current version's build id; absent when unversioned workers take the work" disclose:"deployment"`
	// Ramping says a ramp is on: to RampingBuildID, or to unversioned
	// workers when RampingToUnversioned.
	Ramping              bool    `json:"ramping"`
	RampingBuildID       string  `json:"rampingBuildId,omitempty" jsonschema:"the ramping version's build id" disclose:"deployment"`
	RampingToUnversioned bool    `json:"rampingToUnversioned,omitempty" jsonschema:"the ramp sends its share to unversioned workers"`
	RampingPercentage    float64 `json:"rampingPercentage" jsonschema:"the share of new work, 0 to 100, the ramp takes"`
}

// DeploymentRouting is where a worker deployment sends new workflows, and
// when that last changed.
type DeploymentRouting struct {
	Routes
	CurrentChangedTime *time.Time `json:"currentChangedTime,omitempty"`
	RampingChangedTime *time.Time `json:"rampingChangedTime,omitempty"`
}

// WorkerDeploymentSummary is one worker deployment as the list shows it.
type WorkerDeploymentSummary struct {
	Name          string            `json:"name,omitzero" disclose:"deployment"`
	CreateTime    *time.Time        `json:"createTime,omitempty"`
	Routing       DeploymentRouting `json:"routing"`
	LatestBuildID string            `json:"latestBuildId,omitempty" jsonschema:"the newest version's build id" disclose:"deployment"`
}

// WorkerDeploymentList is one page of worker deployments.
type WorkerDeploymentList struct {
	Observation
	Deployments   []WorkerDeploymentSummary `json:"deployments"`
	NextPageToken string                    `json:"nextPageToken,omitempty" disclose:"porthole,token"`
}

// MaxDeploymentVersions bounds the versions a deployment's description
// lists; MaxVersionsWithTaskQueues bounds those whose task queues it reads
// (one more read each): the current and the ramping version first.
const (
	MaxDeploymentVersions     = 50
	MaxVersionsWithTaskQueues = 10
	// MaxVersionTaskQueues bounds the task queues listed of one version.
	MaxVersionTaskQueues = 50
)

// WorkerDeploymentDescription is one worker deployment: where it routes new
// workflows and its versions. Version metadata, compute configuration and
// the identities that changed it are never read.
type WorkerDeploymentDescription struct {
	Observation
	Name         string              `json:"name,omitzero" disclose:"deployment"`
	CreateTime   *time.Time          `json:"createTime,omitempty"`
	Routing      DeploymentRouting   `json:"routing"`
	Versions     []DeploymentVersion `json:"versions"`
	MoreVersions int                 `json:"moreVersions,omitempty" jsonschema:"how many more versions were left out"`
	// TaskQueuesUnread counts the versions listed whose task queues were
	// not read: past MaxVersionsWithTaskQueues, or deleted between the
	// two reads.
	TaskQueuesUnread int `json:"taskQueuesUnread,omitempty" jsonschema:"how many listed versions' task queues were not read"`
}

// DeploymentVersion is one version of a worker deployment, named by its
// build id.
type DeploymentVersion struct {
	BuildID string `json:"buildId,omitzero" disclose:"deployment"`
	// Status is Inactive, Current, Ramping, Draining or Drained.
	Status string `json:"status" disclose:"enum"`
	// DrainageStatus is whether workflows pinned to a version that no
	// longer takes new ones can still reach it: Draining while some are
	// open, Drained when none are. It is how Temporal reports a version's
	// reachability.
	DrainageStatus       string             `json:"drainageStatus,omitempty" disclose:"enum"`
	CreateTime           *time.Time         `json:"createTime,omitempty"`
	CurrentSinceTime     *time.Time         `json:"currentSinceTime,omitempty"`
	RampingSinceTime     *time.Time         `json:"rampingSinceTime,omitempty"`
	LastDeactivationTime *time.Time         `json:"lastDeactivationTime,omitempty"`
	TaskQueues           []VersionTaskQueue `json:"taskQueues,omitempty" jsonschema:"the task queues the version's workers poll, by name; absent when not read"`
	MoreTaskQueues       int                `json:"moreTaskQueues,omitempty" jsonschema:"how many more task queues were left out"`
}

// VersionTaskQueue is a task queue a deployment version's workers poll.
type VersionTaskQueue struct {
	Name string `json:"name,omitzero" disclose:"task-queue"`
	// Type is Workflow, Activity or Nexus.
	Type string `json:"type" disclose:"enum"`
}

// PageToken and WithPageToken let the gateway seal the token a page
// carries without touching the value (a cached one is shared): WithPageToken
// is a copy with the token replaced.

func (l *WorkflowList) PageToken() string { return l.NextPageToken }

func (l *WorkflowList) WithPageToken(t string) any { c := *l; c.NextPageToken = t; return &c }

func (h *History) PageToken() string { return h.NextPageToken }

func (h *History) WithPageToken(t string) any { c := *h; c.NextPageToken = t; return &c }

func (l *ScheduleList) PageToken() string { return l.NextPageToken }

func (l *ScheduleList) WithPageToken(t string) any { c := *l; c.NextPageToken = t; return &c }

func (l *BatchOperationList) PageToken() string { return l.NextPageToken }

func (l *BatchOperationList) WithPageToken(t string) any { c := *l; c.NextPageToken = t; return &c }

func (l *WorkerDeploymentList) PageToken() string { return l.NextPageToken }

func (l *WorkerDeploymentList) WithPageToken(t string) any { c := *l; c.NextPageToken = t; return &c }
