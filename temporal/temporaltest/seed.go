package temporaltest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nexus-rpc/sdk-go/nexus"
	batchpb "go.temporal.io/api/batch/v1"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	nexuspb "go.temporal.io/api/nexus/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/temporalnexus"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Canary values. Each sits in a place that can carry a payload or a
// credential; none may ever appear in anything porthole returns. They share
// CanaryPrefix so one search of a response finds any of them.
const (
	CanaryPrefix          = "PORTHOLE-CANARY-"
	CanaryInput           = CanaryPrefix + "workflow-input"
	CanaryResult          = CanaryPrefix + "workflow-result"
	CanaryActivityInput   = CanaryPrefix + "activity-input"
	CanaryActivityResult  = CanaryPrefix + "activity-result"
	CanaryMemo            = CanaryPrefix + "memo"
	CanarySearchAttribute = CanaryPrefix + "search-attribute"
	CanaryHeader          = CanaryPrefix + "header"
	CanaryHeartbeat       = CanaryPrefix + "heartbeat-details"
	CanaryFailureDetails  = CanaryPrefix + "failure-details"
	CanarySummary         = CanaryPrefix + "user-metadata-summary"
	CanaryDetails         = CanaryPrefix + "user-metadata-details"
	CanaryScheduleArgs    = CanaryPrefix + "schedule-action-args"
	CanaryScheduleMemo    = CanaryPrefix + "schedule-memo"
	CanaryChildInput      = CanaryPrefix + "child-input"
	CanaryBatchQuery      = CanaryPrefix + "batch-query"
	CanaryVersionMetadata = CanaryPrefix + "deployment-version-metadata"
	CanaryRoutingIdentity = CanaryPrefix + "deployment-routing-identity"
	CanaryBatchSignal     = CanaryPrefix + "batch-signal-input"
)

// Secret-shaped strings a careless worker wrote into a failure message. They
// may reach porthole only as [REDACTED:kind]. None is a real credential.
const (
	SecretJWT    = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwb3J0aG9sZSJ9.cG9ydGhvbGUtc2VlZGVyLXNpZ25hdHVyZQ"
	SecretAWSKey = "AKIAPORTHOLESEED0001"
	SecretBearer = "seed-bearer-4f1c2a9e7b3d"
)

// HostileIdentity is the seed worker's identity: it carries a right-to-left
// override and a zero-width space, which porthole must show escaped.
const HostileIdentity = WorkerIdentity + "\u202e\u200b"

// FreeTextMarker is written into free text (failure messages, schedule
// notes). Such text may reach a client, but only as quoted text with its
// origin; tests check that the marker never appears outside one.
const FreeTextMarker = "porthole-free-text-marker"

// CustomerEmail and CustomerNumber are personal data a developer wrote
// into free text (the failed workflow's failure message, the schedule's
// note, the batch operation's reason): a disclosure profile that withholds
// free text must keep them from a client, and one that runs the e-mail
// detector on it must redact the address.
const (
	CustomerEmail  = "jane.customer@example.com"
	CustomerNumber = "CUST-77001234"
)

// Names of what Seed creates.
const (
	TaskQueue           = "porthole-demo"
	WorkerIdentity      = "porthole-demo-worker"
	CompletedWorkflowID = "order-completed-1"
	FailedWorkflowID    = "order-failed-1"
	TimedOutWorkflowID  = "order-timed-out-1"
	// NexusCallerWorkflowID waits on a Nexus operation whose handler
	// started NexusHandlerWorkflowID, which holds the caller's callback.
	NexusCallerWorkflowID  = "dispatch-running-1"
	NexusHandlerWorkflowID = "courier-running-1"
	NexusEndpoint          = "porthole-demo-nexus"
	NexusService           = "shipping"
	NexusOperation         = "book-courier"
	RunningWorkflowID      = "shipment-running-1"
	ChildWorkflowID        = "shipment-running-1-label"
	ScheduleID             = "nightly-report"
	// BatchJobID is a batch operation that signals the workflows of a query
	// matching none: it completes having touched nothing. Its identity and
	// reason carry FreeTextMarker and SecretAWSKey.
	BatchJobID    = "porthole-seed-batch"
	BatchIdentity = "porthole-seeder " + FreeTextMarker + " key " + SecretAWSKey
	BatchReason   = "reconciling carriers: " + FreeTextMarker + "; key " + SecretAWSKey + " for " + CustomerNumber
	// The query matches no workflow, and holds a canary: a batch's query
	// is never read.
	batchSignalQuery = "WorkflowId = 'porthole-seed-batch-matches-nothing' OR WorkflowId = '" + CanaryBatchQuery + "'"

	OrderWorkflowType     = "OrderWorkflow"
	FailingWorkflowType   = "InventoryWorkflow"
	ShipmentWorkflowType  = "ShipmentWorkflow"
	ChildWorkflowType     = "PrintLabelWorkflow"
	ChargeActivityType    = "ChargeCard"
	ReserveActivityType   = "ReserveCarrier"
	SlowWorkflowType      = "PackingWorkflow"
	StockActivityType     = "CheckStock"
	PackActivityType      = "PackParcel"
	DispatchWorkflowType  = "DispatchWorkflow"
	VersionedWorkflowType = "LabelPrinterWorkflow"
	CourierWorkflowType   = "CourierWorkflow"
)

// The worker deployment: two versions of versioned workers polling
// VersionedTaskQueue, CurrentBuildID current and RampingBuildID ramping at
// RampPercentage.
const (
	DeploymentName     = "porthole-demo-printers"
	VersionedTaskQueue = "porthole-versioned"
	CurrentBuildID     = "printers-1.0"
	RampingBuildID     = "printers-1.1"
	RampPercentage     = 25
)

// The failed workflow's chain of causes: the workflow's own failure, the
// activity's (Temporal's wrapper), the activity's application error, and
// the error that caused it. Their messages hold secrets and a bidi
// override that must reach a client quoted, redacted and escaped.
const (
	FailureMessage      = "inventory check failed: " + FreeTextMarker + " for " + CustomerEmail + " (" + CustomerNumber + ")"
	StockFailureMessage = "stock service refused: session " + SecretJWT
	RootCauseMessage    = "warehouse db \u202e unreachable with key " + SecretAWSKey
)

// Fixture is a seeded namespace with its worker still running: the running
// workflow's activity keeps failing and retrying while the worker lives.
type Fixture struct {
	worker    worker.Worker
	versioned []worker.Worker
	client    client.Client
	namespace string
}

// Stop stops the worker and closes the seeding client.
func (f *Fixture) Stop() {
	for _, w := range f.versioned {
		w.Stop()
	}
	f.worker.Stop()
	f.client.Close()
}

// Seed starts a worker and creates a completed, a failed and a running
// workflow (with a failing, retrying activity and a child workflow), and a
// schedule, each carrying canaries, then waits until Temporal shows them all.
func Seed(ctx context.Context, hostPort, namespace string) (*Fixture, error) {
	c, err := client.DialContext(ctx, client.Options{
		HostPort:           hostPort,
		Namespace:          namespace,
		Logger:             Quiet(),
		Identity:           HostileIdentity,
		ContextPropagators: []workflow.ContextPropagator{canaryHeader{}},
	})
	if err != nil {
		return nil, fmt.Errorf("seed: dialing: %w", err)
	}
	w := worker.New(c, TaskQueue, worker.Options{Identity: HostileIdentity})
	w.RegisterWorkflowWithOptions(orderWorkflow, workflow.RegisterOptions{Name: OrderWorkflowType})
	w.RegisterWorkflowWithOptions(inventoryWorkflow, workflow.RegisterOptions{Name: FailingWorkflowType})
	w.RegisterWorkflowWithOptions(shipmentWorkflow, workflow.RegisterOptions{Name: ShipmentWorkflowType})
	w.RegisterWorkflowWithOptions(printLabelWorkflow, workflow.RegisterOptions{Name: ChildWorkflowType})
	w.RegisterActivityWithOptions(chargeCard, activity.RegisterOptions{Name: ChargeActivityType})
	w.RegisterActivityWithOptions(reserveCarrier, activity.RegisterOptions{Name: ReserveActivityType})
	w.RegisterWorkflowWithOptions(packingWorkflow, workflow.RegisterOptions{Name: SlowWorkflowType})
	w.RegisterWorkflowWithOptions(dispatchWorkflow, workflow.RegisterOptions{Name: DispatchWorkflowType})
	w.RegisterWorkflowWithOptions(courierWorkflow, workflow.RegisterOptions{Name: CourierWorkflowType})
	shipping := nexus.NewService(NexusService)
	if err := shipping.Register(temporalnexus.NewWorkflowRunOperation(NexusOperation, courierWorkflow,
		func(context.Context, OrderInput, nexus.StartOperationOptions) (client.StartWorkflowOptions, error) {
			return client.StartWorkflowOptions{ID: NexusHandlerWorkflowID, TaskQueue: TaskQueue,
				WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE}, nil
		})); err != nil {
		c.Close()
		return nil, fmt.Errorf("seed: the Nexus service: %w", err)
	}
	w.RegisterNexusService(shipping)
	w.RegisterActivityWithOptions(checkStock, activity.RegisterOptions{Name: StockActivityType})
	w.RegisterActivityWithOptions(packParcel, activity.RegisterOptions{Name: PackActivityType})
	if err := w.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("seed: starting the worker: %w", err)
	}
	f := &Fixture{worker: w, client: c, namespace: namespace}
	if err := f.seed(ctx); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

func (f *Fixture) startOptions(id string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                TaskQueue,
		Memo:                     map[string]any{"canary": CanaryMemo},
		TypedSearchAttributes:    temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(CustomSearchAttribute).ValueSet(CanarySearchAttribute)),
		StaticSummary:            CanarySummary,
		StaticDetails:            CanaryDetails,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
}

func (f *Fixture) seed(ctx context.Context) error {
	completed, err := f.client.ExecuteWorkflow(ctx, f.startOptions(CompletedWorkflowID), OrderWorkflowType, CanaryInput)
	if err != nil {
		return fmt.Errorf("seed: starting %s: %w", CompletedWorkflowID, err)
	}
	failed, err := f.client.ExecuteWorkflow(ctx, f.startOptions(FailedWorkflowID), FailingWorkflowType, CanaryInput)
	if err != nil {
		return fmt.Errorf("seed: starting %s: %w", FailedWorkflowID, err)
	}
	if _, err := f.client.ExecuteWorkflow(ctx, f.startOptions(RunningWorkflowID), ShipmentWorkflowType, CanaryInput); err != nil {
		return fmt.Errorf("seed: starting %s: %w", RunningWorkflowID, err)
	}
	if err := f.nexusEndpoint(ctx); err != nil {
		return err
	}
	if _, err := f.client.ExecuteWorkflow(ctx, f.startOptions(NexusCallerWorkflowID), DispatchWorkflowType, CanaryInput); err != nil {
		return fmt.Errorf("seed: starting %s: %w", NexusCallerWorkflowID, err)
	}
	slow := f.startOptions(TimedOutWorkflowID)
	slow.WorkflowExecutionTimeout = 4 * time.Second
	timedOut, err := f.client.ExecuteWorkflow(ctx, slow, SlowWorkflowType, CanaryInput)
	if err != nil {
		return fmt.Errorf("seed: starting %s: %w", TimedOutWorkflowID, err)
	}
	if err := completed.Get(ctx, nil); err != nil {
		return fmt.Errorf("seed: %s did not complete: %w", CompletedWorkflowID, err)
	}
	if err := failed.Get(ctx, nil); err == nil {
		return fmt.Errorf("seed: %s completed but should have failed", FailedWorkflowID)
	}
	if err := timedOut.Get(ctx, nil); !errors.As(err, new(*temporal.TimeoutError)) {
		return fmt.Errorf("seed: %s should have timed out: %v", TimedOutWorkflowID, err)
	}
	_, err = f.client.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:   ScheduleID,
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour}}},
		Action: &client.ScheduleWorkflowAction{
			ID:        "nightly-report-run",
			Workflow:  OrderWorkflowType,
			Args:      []any{CanaryScheduleArgs},
			TaskQueue: TaskQueue,
			Memo:      map[string]any{"canary": CanaryScheduleMemo},
		},
		Note:               "created by the porthole seeder: " + FreeTextMarker + " for " + CustomerEmail,
		Memo:               map[string]any{"canary": CanaryScheduleMemo},
		TriggerImmediately: true,
	})
	if err != nil && !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("seed: creating schedule %s: %w", ScheduleID, err)
	}
	if err := f.startBatch(ctx); err != nil {
		return err
	}
	if err := f.deployment(ctx); err != nil {
		return err
	}
	return f.waitUntilVisible(ctx)
}

// nexusEndpoint makes the endpoint the Nexus caller calls, targeting the
// seed worker's task queue; one made by an earlier seeding is kept.
func (f *Fixture) nexusEndpoint(ctx context.Context) error {
	_, err := f.client.OperatorService().CreateNexusEndpoint(ctx, &operatorservice.CreateNexusEndpointRequest{Spec: &nexuspb.EndpointSpec{
		Name: NexusEndpoint,
		Target: &nexuspb.EndpointTarget{Variant: &nexuspb.EndpointTarget_Worker_{Worker: &nexuspb.EndpointTarget_Worker{
			Namespace: f.namespace, TaskQueue: TaskQueue}}},
	}})
	if err != nil && !errors.As(err, new(*serviceerror.AlreadyExists)) {
		return fmt.Errorf("seed: creating the Nexus endpoint: %w", err)
	}
	return nil
}

// deployment starts a versioned worker for each of two build ids and, once
// Temporal knows both versions (a version exists once its workers poll),
// makes the first current and ramps the second.
func (f *Fixture) deployment(ctx context.Context) error {
	for _, build := range []string{CurrentBuildID, RampingBuildID} {
		w := worker.New(f.client, VersionedTaskQueue, worker.Options{
			Identity: WorkerIdentity + "-" + build,
			DeploymentOptions: worker.DeploymentOptions{
				UseVersioning:             true,
				Version:                   worker.WorkerDeploymentVersion{DeploymentName: DeploymentName, BuildID: build},
				DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade,
			},
		})
		w.RegisterWorkflowWithOptions(printLabelWorkflow, workflow.RegisterOptions{Name: VersionedWorkflowType})
		if err := w.Start(); err != nil {
			return fmt.Errorf("seed: starting the versioned worker %s: %w", build, err)
		}
		f.versioned = append(f.versioned, w)
	}
	h := f.client.WorkerDeploymentClient().GetHandle(DeploymentName)
	deadline := time.Now().Add(60 * time.Second)
	for {
		// The identities that change the routing and the versions'
		// metadata carry canaries: neither is ever read.
		_, cerr := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: CurrentBuildID, Identity: CanaryRoutingIdentity})
		var rerr, merr error
		if cerr == nil {
			_, rerr = h.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{BuildID: RampingBuildID, Percentage: RampPercentage, Identity: CanaryRoutingIdentity})
		}
		if cerr == nil && rerr == nil {
			for _, build := range []string{CurrentBuildID, RampingBuildID} {
				if _, merr = h.UpdateVersionMetadata(ctx, client.WorkerDeploymentUpdateVersionMetadataOptions{
					Version:        worker.WorkerDeploymentVersion{DeploymentName: DeploymentName, BuildID: build},
					MetadataUpdate: client.WorkerDeploymentMetadataUpdate{UpsertEntries: map[string]any{"canary": CanaryVersionMetadata}},
				}); merr != nil {
					break
				}
			}
			// Settled: each version answers a describe. Right after the
			// routing and metadata change, Temporal refuses one as
			// throttled ("consistent query buffer is full") for a while.
			for _, build := range []string{CurrentBuildID, RampingBuildID} {
				if merr == nil {
					_, merr = h.DescribeVersion(ctx, client.WorkerDeploymentDescribeVersionOptions{BuildID: build})
				}
			}
			if merr == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("seed: routing the worker deployment: %w", errors.Join(cerr, rerr, merr))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// startBatch starts the batch operation: a signal, whose input is a canary,
// to the workflows of a query that matches none, so that no other
// fixture's state changes.
func (f *Fixture) startBatch(ctx context.Context) error {
	input, err := converter.GetDefaultDataConverter().ToPayloads(CanaryBatchSignal)
	if err != nil {
		return err
	}
	_, err = f.client.WorkflowService().StartBatchOperation(ctx, &workflowservice.StartBatchOperationRequest{
		Namespace:       f.namespace,
		JobId:           BatchJobID,
		VisibilityQuery: batchSignalQuery,
		Reason:          BatchReason,
		Operation: &workflowservice.StartBatchOperationRequest_SignalOperation{SignalOperation: &batchpb.BatchOperationSignal{
			Signal:   "porthole-seed-signal",
			Input:    input,
			Identity: BatchIdentity,
		}},
	})
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("seed: starting batch operation %s: %w", BatchJobID, err)
	}
	return nil
}

// waitUntilVisible polls until the running workflow's activity has failed at
// least once, its child is running, the schedule has acted, and visibility
// lists every seeded workflow.
func (f *Fixture) waitUntilVisible(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		why := f.notYet(ctx)
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("seed: fixtures not visible after 60s: %s", why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// notYet says what the seeded namespace does not show yet, or "" once it
// shows everything the tests read.
func (f *Fixture) notYet(ctx context.Context) string {
	for _, check := range []func(context.Context) string{f.workflowsNotYet, f.nexusNotYet, f.schedulesAndBatchesNotYet, f.visibilityNotYet} {
		if why := check(ctx); why != "" {
			return why
		}
	}
	return ""
}

// describe is the workflow service's description of a workflow, or why
// there is none.
func (f *Fixture) describe(ctx context.Context, workflowID string) (*workflowservice.DescribeWorkflowExecutionResponse, string) {
	d, err := f.client.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: f.namespace,
		Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID},
	})
	if err != nil {
		return nil, err.Error()
	}
	return d, ""
}

// workflowsNotYet: the running workflow's activity has failed once, and
// its child has started.
func (f *Fixture) workflowsNotYet(ctx context.Context) string {
	d, why := f.describe(ctx, RunningWorkflowID)
	switch {
	case why != "":
		return why
	case len(d.GetPendingActivities()) == 0 || d.GetPendingActivities()[0].GetLastFailure() == nil:
		return "the running workflow's activity has not failed yet"
	case len(d.GetPendingChildren()) == 0:
		return "the child workflow has not started"
	}
	return ""
}

// nexusNotYet: the Nexus operation has started, and its handler's
// workflow holds a callback.
func (f *Fixture) nexusNotYet(ctx context.Context) string {
	caller, why := f.describe(ctx, NexusCallerWorkflowID)
	if why != "" {
		return why
	}
	if ops := caller.GetPendingNexusOperations(); len(ops) == 0 || ops[0].GetState() != enumspb.PENDING_NEXUS_OPERATION_STATE_STARTED {
		return "the Nexus operation has not started"
	}
	handler, why := f.describe(ctx, NexusHandlerWorkflowID)
	if why != "" {
		return why
	}
	if len(handler.GetCallbacks()) == 0 {
		return "the Nexus handler's workflow holds no callback"
	}
	return ""
}

// schedulesAndBatchesNotYet: the schedule has acted, and the batch
// operation has completed.
func (f *Fixture) schedulesAndBatchesNotYet(ctx context.Context) string {
	s, err := f.client.ScheduleClient().GetHandle(ctx, ScheduleID).Describe(ctx)
	if err != nil {
		return err.Error()
	}
	if len(s.Info.RecentActions) == 0 {
		return "the schedule has not acted yet"
	}
	b, err := f.client.WorkflowService().DescribeBatchOperation(ctx, &workflowservice.DescribeBatchOperationRequest{Namespace: f.namespace, JobId: BatchJobID})
	if err != nil {
		return err.Error()
	}
	if b.GetState() != enumspb.BATCH_OPERATION_STATE_COMPLETED {
		return "the batch operation is " + b.GetState().String()
	}
	return ""
}

// visibilityNotYet: visibility lists each seeded workflow, and the closed
// ones.
func (f *Fixture) visibilityNotYet(ctx context.Context) string {
	for _, id := range []string{CompletedWorkflowID, FailedWorkflowID, TimedOutWorkflowID, RunningWorkflowID, ChildWorkflowID} {
		resp, err := f.client.CountWorkflow(ctx, countRequest(fmt.Sprintf("WorkflowId = '%s'", id)))
		if err != nil {
			return err.Error()
		}
		if resp.GetCount() == 0 {
			return "visibility does not list " + id + " yet"
		}
	}
	closed, err := f.client.CountWorkflow(ctx, countRequest("ExecutionStatus != 'Running'"))
	if err != nil {
		return err.Error()
	}
	if closed.GetCount() < 4 { // completed, failed, timed out, and the schedule's first run
		return "visibility does not show the closed workflows yet"
	}
	return ""
}

// OrderInput is what the sample workflows take; the canary rides in it.
type OrderInput = string

func orderWorkflow(ctx workflow.Context, input OrderInput) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var charged string
	if err := workflow.ExecuteActivity(ctx, ChargeActivityType, CanaryActivityInput).Get(ctx, &charged); err != nil {
		return "", err
	}
	return CanaryResult, nil
}

// inventoryWorkflow fails with a chain of causes: its own application
// error, caused by the activity's failure, caused by the activity's
// application error, caused by a root error. Each level's details carry a
// canary.
func inventoryWorkflow(ctx workflow.Context, input OrderInput) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	err := workflow.ExecuteActivity(ctx, StockActivityType, CanaryActivityInput).Get(ctx, nil)
	return "", temporal.NewApplicationErrorWithOptions(FailureMessage, "InventoryError",
		temporal.ApplicationErrorOptions{NonRetryable: true, Cause: err, Details: []any{CanaryFailureDetails}})
}

func checkStock(ctx context.Context, input string) error {
	root := temporal.NewApplicationErrorWithOptions(RootCauseMessage, "WarehouseError",
		temporal.ApplicationErrorOptions{Details: []any{CanaryFailureDetails}})
	return temporal.NewApplicationErrorWithOptions(StockFailureMessage, "StockError",
		temporal.ApplicationErrorOptions{NonRetryable: true, Cause: root, Details: []any{CanaryFailureDetails}})
}

// dispatchWorkflow calls the Nexus operation, whose handler starts
// courierWorkflow, and waits on it: the operation stays pending, and the
// handler's workflow holds the callback that will tell this one.
func dispatchWorkflow(ctx workflow.Context, input OrderInput) error {
	c := workflow.NewNexusClient(NexusEndpoint, NexusService)
	fut := c.ExecuteOperation(ctx, NexusOperation, CanaryInput, workflow.NexusOperationOptions{ScheduleToCloseTimeout: 24 * time.Hour})
	return fut.Get(ctx, nil)
}

func courierWorkflow(ctx workflow.Context, input OrderInput) (string, error) {
	return "", workflow.Sleep(ctx, 24*time.Hour)
}

// packingWorkflow times out: its activity outlives its start-to-close
// timeout (one attempt), then the workflow outlives its execution
// timeout.
func packingWorkflow(ctx workflow.Context, input OrderInput) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	_ = workflow.ExecuteActivity(actx, PackActivityType, CanaryActivityInput).Get(ctx, nil)
	return workflow.Sleep(ctx, time.Hour)
}

func packParcel(ctx context.Context, input string) error {
	select {
	case <-ctx.Done():
	case <-time.After(3 * time.Second):
	}
	return nil
}

func shipmentWorkflow(ctx workflow.Context, input OrderInput) error {
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        ChildWorkflowID,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
	})
	workflow.ExecuteChildWorkflow(child, ChildWorkflowType, CanaryChildInput)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID: "reserve-1",
		// The activity fails at once; an attempt outlives this only when the
		// machine is starved (a benchmark saturating it made the last
		// failure a timeout, and the tests that read it failed). A minute is
		// far past that, and attempts still come every 10 s at most.
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
		},
	})
	workflow.ExecuteActivity(actx, ReserveActivityType, CanaryActivityInput)
	return workflow.Sleep(ctx, 24*time.Hour)
}

func printLabelWorkflow(ctx workflow.Context, input OrderInput) error {
	return workflow.Sleep(ctx, 24*time.Hour)
}

func chargeCard(ctx context.Context, input string) (string, error) {
	return CanaryActivityResult, nil
}

func reserveCarrier(ctx context.Context, input string) (string, error) {
	activity.RecordHeartbeat(ctx, CanaryHeartbeat)
	return "", temporal.NewApplicationError("carrier refused the booking: "+FreeTextMarker+
		"; upstream said Authorization: Bearer "+SecretBearer+" for key "+SecretAWSKey+" in session "+SecretJWT,
		"CarrierError", CanaryFailureDetails)
}

// canaryHeader puts a canary into the header of every workflow and activity
// the seeder starts.
type canaryHeader struct{}

const canaryHeaderKey = "porthole-canary"

func (canaryHeader) Inject(_ context.Context, w workflow.HeaderWriter) error {
	p, err := converter.GetDefaultDataConverter().ToPayload(CanaryHeader)
	if err != nil {
		return err
	}
	w.Set(canaryHeaderKey, p)
	return nil
}

func (canaryHeader) Extract(ctx context.Context, _ workflow.HeaderReader) (context.Context, error) {
	return ctx, nil
}

func (h canaryHeader) InjectFromWorkflow(_ workflow.Context, w workflow.HeaderWriter) error {
	return h.Inject(context.Background(), w)
}

func (canaryHeader) ExtractToWorkflow(ctx workflow.Context, _ workflow.HeaderReader) (workflow.Context, error) {
	return ctx, nil
}

func countRequest(query string) *workflowservice.CountWorkflowExecutionsRequest {
	return &workflowservice.CountWorkflowExecutionsRequest{Query: query}
}

// StartSeeded starts a dev server and seeds it: what a test package's
// TestMain or a benchmark needs. stop stops the worker, then the server.
func StartSeeded(ctx context.Context, opts Options) (srv *DevServer, stop func(), err error) {
	if srv, err = Start(ctx, opts); err != nil {
		return nil, nil, err
	}
	fix, err := Seed(ctx, srv.FrontendHostPort(), srv.Namespace)
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	return srv, func() { fix.Stop(); srv.Stop() }, nil
}
