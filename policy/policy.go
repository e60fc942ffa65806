// Package policy decides what a call may ask for before anything reaches
// Temporal: which tools exist, and whether a call's arguments are in bounds.
//
// # Trust model
//
// Arguments come from a client porthole does not trust. Every bound here is
// checked on the decoded value that is then dispatched, and a value out of
// bounds is refused with a sentence that says which argument and why, never
// clamped silently: a client that asked for 10,000 workflows should learn it
// got at most 100 because it asked wrongly, not because the list was short.
package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The fixed tool set. Nothing that starts, signals, queries, updates,
// cancels, terminates, resets, deletes, pauses or triggers is among them.
// list_batch_operations and describe_batch_operation carry "batch", and
// list_worker_deployments and describe_worker_deployment "deploy", mutating
// verbs to the screen that upstream tools pass (MutatingVerbs): they read
// batch operations and worker deployments and change none; the gateway's
// tests name the read RPCs each makes.
const (
	ToolListWorkflows            = "list_workflows"
	ToolCountWorkflows           = "count_workflows"
	ToolDescribeWorkflow         = "describe_workflow"
	ToolGetWorkflowHistory       = "get_workflow_history"
	ToolDescribeTaskQueue        = "describe_task_queue"
	ToolListSchedules            = "list_schedules"
	ToolDescribeSchedule         = "describe_schedule"
	ToolDescribeNamespace        = "describe_namespace"
	ToolListSearchAttributes     = "list_search_attributes"
	ToolListBatchOperations      = "list_batch_operations"
	ToolDescribeBatchOperation   = "describe_batch_operation"
	ToolListWorkerDeployments    = "list_worker_deployments"
	ToolDescribeWorkerDeployment = "describe_worker_deployment"
)

// Tools lists every tool porthole serves, in the order tools/list shows them.
var Tools = []string{
	ToolListWorkflows,
	ToolCountWorkflows,
	ToolDescribeWorkflow,
	ToolGetWorkflowHistory,
	ToolDescribeTaskQueue,
	ToolListSchedules,
	ToolDescribeSchedule,
	ToolDescribeNamespace,
	ToolListSearchAttributes,
	ToolListBatchOperations,
	ToolDescribeBatchOperation,
	ToolListWorkerDeployments,
	ToolDescribeWorkerDeployment,
}

// Bounds on arguments.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
	// MaxHistoryPageSize is larger because history events are small.
	MaxHistoryPageSize = 500
	// MaxIdentifierLen bounds workflow ids, run ids, task queue and schedule
	// names a client sends. Temporal's own default limit is 1000 bytes;
	// porthole's results cap identifiers at 256, and nothing longer can be
	// asked for that porthole could show.
	MaxIdentifierLen = 1000
	// MaxQueryLen bounds a visibility query.
	MaxQueryLen = 2048
	// MaxPageTokenLen bounds an opaque page token handed back.
	MaxPageTokenLen = 4096
)

// ErrOutOfBounds wraps every argument refusal. Its text is a sentence meant
// for the client.
var ErrOutOfBounds = errors.New("argument out of bounds")

type boundsError struct{ sentence string }

func (e *boundsError) Error() string        { return e.sentence }
func (e *boundsError) Is(target error) bool { return target == ErrOutOfBounds }

// Refuse makes a refusal: one sentence that names the argument (spelled as
// the client spells it, so not capitalised) and what is wrong with it. It
// wraps ErrOutOfBounds, and its text is meant for the client.
func Refuse(format string, args ...any) error {
	s := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return &boundsError{sentence: s}
}

// PageSize returns the page size to use: the default when the client gave
// none, the value when it is within 1..max, a refusal otherwise.
func PageSize(n, max int) (int, error) {
	switch {
	case n == 0:
		return min(DefaultPageSize, max), nil
	case n < 0:
		return 0, Refuse("pageSize must be positive; it was %d", n)
	case n > max:
		return 0, Refuse("pageSize may be at most %d; it was %d", max, n)
	}
	return n, nil
}

// CheckIdentifier checks an identifier argument: present when required, valid
// UTF-8, no control characters, not too long.
func CheckIdentifier(arg, v string, required bool) error {
	switch {
	case v == "" && required:
		return Refuse("%s is required", arg)
	case len(v) > MaxIdentifierLen:
		return Refuse("%s may be at most %d bytes; it was %d", arg, MaxIdentifierLen, len(v))
	case !utf8.ValidString(v):
		return Refuse("%s is not valid UTF-8", arg)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return Refuse("%s contains a control character", arg)
		}
	}
	return nil
}

// Page checks a page request: the opaque token's size, and the page size as
// PageSize does. It returns the page size to use.
func Page(token string, size, max int) (int, error) {
	if len(token) > MaxPageTokenLen {
		return 0, Refuse("nextPageToken is longer than any porthole issues")
	}
	return PageSize(size, max)
}
