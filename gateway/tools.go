package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porthole-dev/porthole/gateway/fastpath"
	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact/quote"
	"github.com/porthole-dev/porthole/temporal/read"
)

// Tool descriptions are constants: they are what a model reads to choose a
// tool, and nothing a client or Temporal says can change them. They are
// short because a model pays for every byte.
const (
	descListWorkflows = "List workflow executions in the namespace, newest first, one page at a time. " +
		"Optional query uses Temporal visibility syntax, e.g. ExecutionStatus = 'Failed' AND WorkflowType = 'Order'. " +
		"Returns ids, type, task queue, status and times; never inputs, results or memo."
	descCountWorkflows   = "Count workflow executions in the namespace that match an optional visibility query."
	descDescribeWorkflow = "Describe one workflow execution: status, times, pending activities " +
		"(attempt, last failure message as quoted text), child workflows, Nexus operations and callbacks; " +
		"why a failed one failed (message and causes) and which timeout a timed-out one hit. runId defaults to the latest run."
	descGetWorkflowHistory = "Read one page of a workflow execution's event history: event id, type and time, " +
		"activity, timer and child-workflow identifiers, failure messages as quoted text, timeout types. " +
		"Never payloads, failure details or stack traces."
	descDescribeTaskQueue        = "Describe a task queue: the workers polling it for workflow and activity tasks, and its backlog."
	descListSchedules            = "List schedules in the namespace: id, workflow type, paused, recent and next actions."
	descDescribeSchedule         = "Describe one schedule: its intervals and cron expressions, policies, counts, and recent, running and next actions. Never the action's arguments."
	descDescribeNamespace        = "Describe the namespace porthole reads: state, retention, archival, server version."
	descListSearchAttributes     = "List the namespace's search attributes, system and custom: name, type, and whether porthole allows it in a query. Never values."
	descListBatchOperations      = "List batch operations in the namespace: job id, type, state, start and close time."
	descDescribeBatchOperation   = "Describe one batch operation: type, state, times, counts (total, complete, failed), and identity and reason as quoted text."
	descListWorkerDeployments    = "List worker deployments (Worker Versioning) in the namespace: name, current and ramping build ids, ramp percentage, latest build id."
	descDescribeWorkerDeployment = "Describe one worker deployment: current and ramping version, ramp percentage, and each version's status, drainage, times and task queues."
)

// Tool inputs. Field names are camelCase; no input names a namespace, which
// is fixed when porthole dials. An argument that names a value of a
// disclosure class carries it in a `disclose` tag, so that a caller whose
// profile withholds the class cannot ask about one (askedWithheld).

type listWorkflowsInput struct {
	Query         string `json:"query,omitempty" jsonschema:"visibility query; empty lists all"`
	PageSize      int    `json:"pageSize,omitempty" jsonschema:"1 to 100, default 20"`
	NextPageToken string `json:"nextPageToken,omitempty" jsonschema:"from the previous page"`
}

type countWorkflowsInput struct {
	Query string `json:"query,omitempty" jsonschema:"visibility query; empty counts all"`
}

type workflowInput struct {
	WorkflowID string `json:"workflowId" jsonschema:"the workflow id" disclose:"workflow-id"`
	RunID      string `json:"runId,omitempty" jsonschema:"a run id; default the latest run" disclose:"run-id"`
}

type historyInput struct {
	WorkflowID    string `json:"workflowId" jsonschema:"the workflow id" disclose:"workflow-id"`
	RunID         string `json:"runId,omitempty" jsonschema:"a run id; default the latest run" disclose:"run-id"`
	PageSize      int    `json:"pageSize,omitempty" jsonschema:"1 to 500 events, default 20"`
	NextPageToken string `json:"nextPageToken,omitempty" jsonschema:"from the previous page"`
}

type taskQueueInput struct {
	TaskQueue string `json:"taskQueue" jsonschema:"the task queue name" disclose:"task-queue"`
}

type listSchedulesInput struct {
	PageSize      int    `json:"pageSize,omitempty" jsonschema:"1 to 100, default 20"`
	NextPageToken string `json:"nextPageToken,omitempty" jsonschema:"from the previous page"`
}

type scheduleInput struct {
	ScheduleID string `json:"scheduleId" jsonschema:"the schedule id" disclose:"schedule-id"`
}

type listBatchOperationsInput struct {
	PageSize      int    `json:"pageSize,omitempty" jsonschema:"1 to 100, default 20"`
	NextPageToken string `json:"nextPageToken,omitempty" jsonschema:"from the previous page"`
}

type batchOperationInput struct {
	JobID string `json:"jobId" jsonschema:"the batch operation's job id" disclose:"batch-job-id"`
}

type listWorkerDeploymentsInput struct {
	PageSize      int    `json:"pageSize,omitempty" jsonschema:"1 to 100, default 20"`
	NextPageToken string `json:"nextPageToken,omitempty" jsonschema:"from the previous page"`
}

type workerDeploymentInput struct {
	DeploymentName string `json:"deploymentName" jsonschema:"the worker deployment's name" disclose:"deployment"`
}

type noInput struct{}

// tool is one entry of the fixed tool set: its definition, the Go type of its
// output (walked by the structural test), and how to register its handler.
type tool struct {
	def     *mcp.Tool
	schemas [2]*jsonschema.Schema // input and output, as derived; def holds their JSON
	output  reflect.Type
	handler mcp.ToolHandler
}

// schemaJSON is a schema as the go-sdk would write it: marshalled without
// HTML escaping, as the go-sdk's encoder writes every message.
func schemaJSON(s *jsonschema.Schema) json.RawMessage {
	b, err := fastpath.MarshalUnescaped(s)
	if err != nil {
		panic(fmt.Sprintf("marshalling a derived schema: %v", err))
	}
	return b
}

// readOnly is the annotation every tool carries.
func readOnly() *mcp.ToolAnnotations {
	f := false
	return &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f}
}

// define builds a tool entry. Bounds are checked by check before call runs,
// on the same decoded value.
//
// porthole registers its handlers with the go-sdk's untyped AddTool rather
// than the generic one: the generic path marshals the result, then decodes
// and validates it against the output schema derived from the very same Go
// type, which can only pass and costs a sixth of a call's CPU. Here the
// input is still validated against its schema (unknown arguments are
// refused), and the result is marshalled once, for both structuredContent
// and the text content.
func define[In any, Out any](g *Server, name, desc string, check func(*In) error, call func(context.Context, In) (Out, error)) tool {
	inSchema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", name, err))
	}
	inSchema = portable(inSchema)
	if inSchema.Properties == nil {
		inSchema.Properties = map[string]*jsonschema.Schema{} // an object with no arguments, and none allowed
	}
	allowed := argumentNames(reflect.TypeFor[In]())
	classes := argumentClasses(reflect.TypeFor[In]())
	outType := reflect.TypeFor[Out]()
	outSchema, err := jsonschema.ForType(outType.Elem(), nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: output schema: %v", name, err))
	}
	outSchema = portable(outSchema)
	// The schemas go to the go-sdk as the JSON they marshal to, once: the
	// go-sdk only writes them out, on every tools/list, and a derived
	// schema takes milliseconds to marshal.
	def := &mcp.Tool{Name: name, Description: desc, Annotations: readOnly(), InputSchema: schemaJSON(inSchema), OutputSchema: schemaJSON(outSchema)}
	return tool{
		def:     def,
		schemas: [2]*jsonschema.Schema{inSchema, outSchema},
		output:  outType,
		handler: func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			in, page, err := toolInput(g, ctx, req, name, allowed, classes, check)
			if err != nil {
				return toolFailure(g.refuse(ctx, req, name, err)), nil
			}
			ctx, cancel := context.WithTimeout(ctx, g.opts.CallTimeout)
			defer cancel()
			out, err := call(ctx, in)
			if err != nil {
				return toolFailure(g.fail(ctx, req, name, err)), nil
			}
			res, err := g.toolAnswer(ctx, page, out)
			if err != nil {
				return toolFailure(g.fail(ctx, req, name, err)), nil
			}
			return res, nil
		},
	}
}

// callPage is a paged call's page token context: the associated data its
// tokens are sealed under; nil for a call that is not paged.
type callPage struct{ ad []byte }

// toolInput decodes a call's arguments (only those allowed), checks their
// bounds, and opens a paged call's page token, or says why the call is
// refused.
func toolInput[In any](g *Server, ctx context.Context, req *mcp.CallToolRequest, name string, allowed map[string]bool, classes []argumentClass, check func(*In) error) (In, *callPage, error) {
	in, err := decodeArguments[In](g.quote, req.Params.Arguments, allowed)
	if err != nil {
		return in, nil, err
	}
	if err := disclosedArguments(g, ctx, disclosureOf(ctx), &in, classes); err != nil {
		return in, nil, err
	}
	if err := check(&in); err != nil {
		return in, nil, err
	}
	paged, _ := any(&in).(pagedInput)
	if paged == nil {
		return in, nil, nil
	}
	page := &callPage{ad: g.pageAD(ctx, req, name, paged)}
	if err := g.openPageToken(page.ad, paged); err != nil {
		return in, nil, err
	}
	return in, page, nil
}

// toolAnswer is a read's answer: its next page token sealed (for a paged
// call), rendered and redacted once.
func (g *Server) toolAnswer(ctx context.Context, page *callPage, out any) (*mcp.CallToolResult, error) {
	st := resultNotesFrom(ctx)
	// The profile first: the cache entry this answer came from is the
	// profile's own (its key holds the profile's), so its rendering is
	// this disclosure's too.
	result, found := g.disclose(disclosureOf(ctx), out)
	if page != nil {
		var sealed bool
		var err error
		if result, sealed, err = g.sealPageToken(page.ad, result); err != nil {
			return nil, err
		}
		if sealed {
			// The sealed token is this principal's: the rendering must
			// not answer the cache's next hit.
			st.entry = nil
		}
	}
	// Redact once here, on the result alone, and count: the wire redactor
	// still runs where the bytes leave, and then finds nothing left to do,
	// which is its fast path.
	red := g.link(ctx, "porthole redact")
	b, n, err := g.render(st.entry, result)
	n += found
	red.EndWithInt("porthole.redactions", n)
	if err != nil {
		return nil, err
	}
	return answer(st, b, n, false), nil
}

// decodeArguments decodes raw arguments into In, refusing what the input
// schema would: anything but an object, a name that is not exactly one of
// In's arguments (encoding/json alone would match "WORKFLOWID" to
// workflowId), and values of the wrong type. Required arguments are checked
// by policy, with a sentence of their own. This does what validating
// against the schema did, at a fraction of the cost.
func decodeArguments[In any](q quote.Quoter, raw json.RawMessage, allowed map[string]bool) (In, error) {
	var in In
	fields, err := argumentFields(q, raw, allowed)
	if err != nil || len(fields) == 0 {
		return in, err
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, policy.Refuse("an argument has the wrong type: %v", err)
	}
	return in, nil
}

// argumentFields splits raw arguments into their values by name, refusing
// anything but an object (absent and null are no arguments) and any name
// that is not exactly one of allowed: deny by absence, for porthole's own
// tools and for upstream tools alike. The first name refused, in sorted
// order, is the one named.
func argumentFields(q quote.Quoter, raw json.RawMessage, allowed map[string]bool) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(raw) == 0 || string(raw) == "null" {
		return fields, nil
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, policy.Refuse("the arguments are not a JSON object")
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !allowed[name] {
			return nil, policy.Refuse("the tool has no argument %q", q.EscapeIdentifier(name))
		}
	}
	return fields, nil
}

// argumentNames are the JSON names of an input type's fields.
func argumentNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
}

// screenQuery screens a visibility query and returns the text to send
// Temporal in its place: the query printed back from what the screen
// parsed. Security: the client's own text never reaches Temporal, whose
// parser reads some text (a /*! */ comment) differently from the screen's.
func screenQuery(q string, rules policy.QueryRules) (string, error) {
	screened, err := policy.ScreenQuery(q, rules)
	return screened.Text, err
}

func toolFailure(err error) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	res.SetError(err)
	return res
}

// catalog is the fixed tool set, bound to a reader.
//
// Whole: the table of tools, one entry each.
func (g *Server) catalog() []tool {
	r := g.reader
	return []tool{
		define(g, policy.ToolListWorkflows, descListWorkflows,
			func(in *listWorkflowsInput) (err error) {
				if in.Query, err = screenQuery(in.Query, g.queryRules()); err != nil {
					return err
				}
				in.PageSize, err = policy.Page(in.NextPageToken, in.PageSize, policy.MaxPageSize)
				return err
			},
			func(ctx context.Context, in listWorkflowsInput) (*read.WorkflowList, error) {
				return r.ListWorkflows(ctx, read.ListWorkflowsRequest{Query: in.Query, PageSize: in.PageSize, NextPageToken: in.NextPageToken})
			}),
		define(g, policy.ToolCountWorkflows, descCountWorkflows,
			func(in *countWorkflowsInput) (err error) {
				in.Query, err = screenQuery(in.Query, g.queryRules())
				return err
			},
			func(ctx context.Context, in countWorkflowsInput) (*read.WorkflowCount, error) {
				return r.CountWorkflows(ctx, read.CountWorkflowsRequest{Query: in.Query})
			}),
		define(g, policy.ToolDescribeWorkflow, descDescribeWorkflow,
			func(in *workflowInput) error { return checkWorkflowRef(in.WorkflowID, in.RunID) },
			func(ctx context.Context, in workflowInput) (*read.WorkflowDescription, error) {
				return r.DescribeWorkflow(ctx, read.WorkflowRef{WorkflowID: in.WorkflowID, RunID: in.RunID})
			}),
		define(g, policy.ToolGetWorkflowHistory, descGetWorkflowHistory,
			func(in *historyInput) (err error) {
				if err = checkWorkflowRef(in.WorkflowID, in.RunID); err != nil {
					return err
				}
				in.PageSize, err = policy.Page(in.NextPageToken, in.PageSize, policy.MaxHistoryPageSize)
				return err
			},
			func(ctx context.Context, in historyInput) (*read.History, error) {
				return r.GetWorkflowHistory(ctx, read.HistoryRequest{
					WorkflowRef: read.WorkflowRef{WorkflowID: in.WorkflowID, RunID: in.RunID},
					PageSize:    in.PageSize, NextPageToken: in.NextPageToken,
				})
			}),
		define(g, policy.ToolDescribeTaskQueue, descDescribeTaskQueue,
			func(in *taskQueueInput) error { return policy.CheckIdentifier("taskQueue", in.TaskQueue, true) },
			func(ctx context.Context, in taskQueueInput) (*read.TaskQueueDescription, error) {
				return r.DescribeTaskQueue(ctx, read.TaskQueueRequest{TaskQueue: in.TaskQueue})
			}),
		define(g, policy.ToolListSchedules, descListSchedules,
			func(in *listSchedulesInput) (err error) {
				in.PageSize, err = policy.Page(in.NextPageToken, in.PageSize, policy.MaxPageSize)
				return err
			},
			func(ctx context.Context, in listSchedulesInput) (*read.ScheduleList, error) {
				return r.ListSchedules(ctx, read.ListSchedulesRequest{PageSize: in.PageSize, NextPageToken: in.NextPageToken})
			}),
		define(g, policy.ToolDescribeSchedule, descDescribeSchedule,
			func(in *scheduleInput) error { return policy.CheckIdentifier("scheduleId", in.ScheduleID, true) },
			func(ctx context.Context, in scheduleInput) (*read.ScheduleDescription, error) {
				return r.DescribeSchedule(ctx, read.ScheduleRef{ScheduleID: in.ScheduleID})
			}),
		define(g, policy.ToolDescribeNamespace, descDescribeNamespace,
			func(*noInput) error { return nil },
			func(ctx context.Context, _ noInput) (*read.NamespaceDescription, error) {
				return r.DescribeNamespace(ctx)
			}),
		define(g, policy.ToolListSearchAttributes, descListSearchAttributes,
			func(*noInput) error { return nil },
			func(ctx context.Context, _ noInput) (*read.SearchAttributeList, error) {
				l, err := r.ListSearchAttributes(ctx)
				if err != nil {
					return nil, err
				}
				return g.markQueryable(ctx, l), nil
			}),
		define(g, policy.ToolListBatchOperations, descListBatchOperations,
			func(in *listBatchOperationsInput) (err error) {
				in.PageSize, err = policy.Page(in.NextPageToken, in.PageSize, policy.MaxPageSize)
				return err
			},
			func(ctx context.Context, in listBatchOperationsInput) (*read.BatchOperationList, error) {
				return r.ListBatchOperations(ctx, read.ListBatchOperationsRequest{PageSize: in.PageSize, NextPageToken: in.NextPageToken})
			}),
		define(g, policy.ToolDescribeBatchOperation, descDescribeBatchOperation,
			func(in *batchOperationInput) error { return policy.CheckIdentifier("jobId", in.JobID, true) },
			func(ctx context.Context, in batchOperationInput) (*read.BatchOperationDescription, error) {
				return r.DescribeBatchOperation(ctx, read.BatchOperationRef{JobID: in.JobID})
			}),
		define(g, policy.ToolListWorkerDeployments, descListWorkerDeployments,
			func(in *listWorkerDeploymentsInput) (err error) {
				in.PageSize, err = policy.Page(in.NextPageToken, in.PageSize, policy.MaxPageSize)
				return err
			},
			func(ctx context.Context, in listWorkerDeploymentsInput) (*read.WorkerDeploymentList, error) {
				return r.ListWorkerDeployments(ctx, read.ListWorkerDeploymentsRequest{PageSize: in.PageSize, NextPageToken: in.NextPageToken})
			}),
		define(g, policy.ToolDescribeWorkerDeployment, descDescribeWorkerDeployment,
			func(in *workerDeploymentInput) error {
				return policy.CheckIdentifier("deploymentName", in.DeploymentName, true)
			},
			func(ctx context.Context, in workerDeploymentInput) (*read.WorkerDeploymentDescription, error) {
				return r.DescribeWorkerDeployment(ctx, read.WorkerDeploymentRef{DeploymentName: in.DeploymentName})
			}),
	}
}

// markQueryable is l, copied, with each attribute marked by whether the
// query screen lets a query name it under the rules in force now (a
// reloaded policy file's attributes count at once). Where Temporal refused
// the list, it holds the attributes porthole knows instead: the screen's
// system attributes and the custom ones the operator allowed, with source
// "porthole". The operator's list is no secret from a client: the screen's
// refusal of any other attribute names it.
func (g *Server) markQueryable(ctx context.Context, l *read.SearchAttributeList) *read.SearchAttributeList {
	rules := g.queryRules()
	out := *l
	out.Attributes = slices.Clone(l.Attributes)
	if !l.Complete && len(out.Attributes) == 0 {
		for _, name := range policy.SystemAttributes {
			out.Attributes = append(out.Attributes, read.SearchAttribute{Name: name, System: true, Source: "porthole"})
		}
		for _, name := range rules.CustomAttributes {
			out.Attributes = append(out.Attributes, read.SearchAttribute{Name: g.quote.EscapeIdentifier(name), Source: "porthole"})
		}
		slices.SortFunc(out.Attributes, func(x, y read.SearchAttribute) int { return strings.Compare(x.Name, y.Name) })
	}
	for i := range out.Attributes {
		out.Attributes[i].AllowedInQueries = policy.AllowedInQuery(out.Attributes[i].Name, rules)
	}
	// The cache keeps Temporal's answer, not this one: the marks depend on
	// the rules in force at this call, so the entry's first rendering must
	// not answer the next hit (see render).
	resultNotesFrom(ctx).entry = nil
	return &out
}

func checkWorkflowRef(workflowID, runID string) error {
	if err := policy.CheckIdentifier("workflowId", workflowID, true); err != nil {
		return err
	}
	return policy.CheckIdentifier("runId", runID, false)
}
