package temporal

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	deploymentpb "go.temporal.io/api/deployment/v1"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/porthole-dev/porthole/temporal/read"
)

// Worker deployments (Worker Versioning): where each deployment routes new
// workflows and its versions. Of a version, its build id, status, drainage
// and times are read, and the names and types of its task queues; its
// metadata (payloads), compute configuration and the identities of who
// changed the routing are never read.

func (a *Adapter) ListWorkerDeployments(ctx context.Context, req read.ListWorkerDeploymentsRequest) (*read.WorkerDeploymentList, error) {
	token, err := decodePageToken(req.NextPageToken)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.WorkflowService().ListWorkerDeployments(ctx, &workflowservice.ListWorkerDeploymentsRequest{
		Namespace:     a.namespace,
		PageSize:      int32(req.PageSize),
		NextPageToken: token,
	})
	if err != nil {
		return nil, classify(err)
	}
	out := &read.WorkerDeploymentList{
		Observation:   a.observe(),
		Deployments:   make([]read.WorkerDeploymentSummary, 0, len(resp.GetWorkerDeployments())),
		NextPageToken: encodePageToken(resp.GetNextPageToken()),
	}
	for _, d := range resp.GetWorkerDeployments() {
		out.Deployments = append(out.Deployments, read.WorkerDeploymentSummary{
			Name:          a.conv.ident(d.GetName()),
			CreateTime:    timeOf(d.GetCreateTime()),
			Routing:       a.conv.routing(d.GetRoutingConfig()),
			LatestBuildID: a.conv.ident(d.GetLatestVersionSummary().GetDeploymentVersion().GetBuildId()),
		})
	}
	return out, nil
}

// DescribeWorkerDeployment reads the deployment, then the task queues of at
// most read.MaxVersionsWithTaskQueues of its versions (one read each, the
// current and the ramping version first, then the newest): a deployment
// with hundreds of versions costs a bounded number of reads.
func (a *Adapter) DescribeWorkerDeployment(ctx context.Context, ref read.WorkerDeploymentRef) (*read.WorkerDeploymentDescription, error) {
	resp, err := a.client.WorkflowService().DescribeWorkerDeployment(ctx, &workflowservice.DescribeWorkerDeploymentRequest{
		Namespace:      a.namespace,
		DeploymentName: ref.DeploymentName,
	})
	if err != nil {
		return nil, classify(err)
	}
	info := resp.GetWorkerDeploymentInfo()
	summaries := routedFirst(info.GetVersionSummaries())
	out := &read.WorkerDeploymentDescription{
		Observation: a.observe(),
		Name:        a.conv.ident(info.GetName()),
		CreateTime:  timeOf(info.GetCreateTime()),
		Routing:     a.conv.routing(info.GetRoutingConfig()),
	}
	out.Versions, out.MoreVersions = listedUpTo(summaries, read.MaxDeploymentVersions, a.conv.deploymentVersion)
	for i := range out.Versions {
		if i == read.MaxVersionsWithTaskQueues {
			out.TaskQueuesUnread = len(out.Versions) - i
			break
		}
		qs, more, err := a.versionTaskQueues(ctx, summaries[i].GetDeploymentVersion())
		switch {
		case errors.Is(err, read.ErrNotFound):
			// Deleted since the deployment was read: listed, its task
			// queues unread (the whole answer said the
			// deployment did not exist).
			out.TaskQueuesUnread++
			continue
		case err != nil:
			return nil, err
		}
		out.Versions[i].TaskQueues, out.Versions[i].MoreTaskQueues = qs, more
	}
	return out, nil
}

// routedFirst is the versions in the order a description lists them: the
// current, the ramping, then the rest newest first (the ones an agent asks
// about, and the ones whose task queues are read).
func routedFirst(in []*deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary) []*deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary {
	rank := func(s *deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary) int {
		switch s.GetStatus() {
		case enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT:
			return 0
		case enumspb.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING:
			return 1
		}
		return 2
	}
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(x, y *deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary) int {
		if r := rank(x) - rank(y); r != 0 {
			return r
		}
		return y.GetCreateTime().AsTime().Compare(x.GetCreateTime().AsTime())
	})
	return out
}

// versionTaskQueues names the task queues a version's workers poll, sorted,
// at most read.MaxVersionTaskQueues (Temporal lists every queue that ever
// polled), and counts the rest. Task queue statistics are not asked for.
func (a *Adapter) versionTaskQueues(ctx context.Context, v *deploymentpb.WorkerDeploymentVersion) ([]read.VersionTaskQueue, int, error) {
	req := &workflowservice.DescribeWorkerDeploymentVersionRequest{
		Namespace:         a.namespace,
		DeploymentVersion: &deploymentpb.WorkerDeploymentVersion{DeploymentName: v.GetDeploymentName(), BuildId: v.GetBuildId()},
	}
	// Temporal answers this from a query of the deployment's own workflow,
	// whose query buffer is small: a few calls at once fill it and are
	// refused as throttled ("consistent query buffer is full"), which
	// clears within a second. The read is tried at most five times, 50,
	// 100, 200 and 400 ms apart, and only for a throttled refusal.
	var resp *workflowservice.DescribeWorkerDeploymentVersionResponse
	var err error
	for attempt, wait := 0, 50*time.Millisecond; ; attempt, wait = attempt+1, 2*wait {
		resp, err = a.client.WorkflowService().DescribeWorkerDeploymentVersion(ctx, req)
		if err = classify(err); !errors.Is(err, read.ErrThrottled) || attempt == 4 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, 0, err
		case <-time.After(wait):
		}
	}
	if err != nil {
		return nil, 0, err
	}
	qs := slices.Clone(resp.GetVersionTaskQueues())
	slices.SortFunc(qs, func(x, y *workflowservice.DescribeWorkerDeploymentVersionResponse_VersionTaskQueue) int {
		return cmp.Or(strings.Compare(x.GetName(), y.GetName()), int(x.GetType())-int(y.GetType()))
	})
	out, more := listedUpTo(qs, read.MaxVersionTaskQueues, func(q *workflowservice.DescribeWorkerDeploymentVersionResponse_VersionTaskQueue) read.VersionTaskQueue {
		return read.VersionTaskQueue{Name: a.conv.ident(q.GetName()), Type: a.conv.enumName(q.GetType())}
	})
	return out, more, nil
}

// routing is where a deployment sends new workflows. A current or ramping
// version of nil is unversioned workers.
func (c conv) routing(r *deploymentpb.RoutingConfig) read.DeploymentRouting {
	return read.DeploymentRouting{
		Routes:             c.routes(r.GetCurrentDeploymentVersion(), r.GetRampingDeploymentVersion(), r.GetRampingVersionPercentage()),
		CurrentChangedTime: timeOf(r.GetCurrentVersionChangedTime()),
		RampingChangedTime: timeOf(r.GetRampingVersionChangedTime()),
	}
}

// routes names the current and ramping versions. A ramp is on when a
// version ramps or the percentage is set: a ramp to unversioned workers has
// no ramping version (it read as no ramp at all).
func (c conv) routes(current, ramping *deploymentpb.WorkerDeploymentVersion, percentage float32) read.Routes {
	r := read.Routes{
		CurrentBuildID:    c.ident(current.GetBuildId()),
		RampingBuildID:    c.ident(ramping.GetBuildId()),
		RampingPercentage: float64(percentage),
	}
	r.Ramping = ramping != nil || percentage > 0
	r.RampingToUnversioned = r.Ramping && ramping == nil
	return r
}

// taskQueueVersioning is where a versioned task queue routes new work.
func (c conv) taskQueueVersioning(v *taskqueuepb.TaskQueueVersioningInfo) *read.TaskQueueVersioning {
	name := v.GetCurrentDeploymentVersion().GetDeploymentName()
	if name == "" {
		name = v.GetRampingDeploymentVersion().GetDeploymentName()
	}
	return &read.TaskQueueVersioning{
		DeploymentName: c.ident(name),
		Routes:         c.routes(v.GetCurrentDeploymentVersion(), v.GetRampingDeploymentVersion(), v.GetRampingVersionPercentage()),
		UpdateTime:     timeOf(v.GetUpdateTime()),
	}
}

func (c conv) deploymentVersion(s *deploymentpb.WorkerDeploymentInfo_WorkerDeploymentVersionSummary) read.DeploymentVersion {
	v := read.DeploymentVersion{
		BuildID:              c.ident(s.GetDeploymentVersion().GetBuildId()),
		Status:               c.enumName(s.GetStatus()),
		CreateTime:           timeOf(s.GetCreateTime()),
		CurrentSinceTime:     timeOf(s.GetCurrentSinceTime()),
		RampingSinceTime:     timeOf(s.GetRampingSinceTime()),
		LastDeactivationTime: timeOf(s.GetLastDeactivationTime()),
	}
	// drainage_info is where Temporal reports it now; the summary's own
	// drainage_status is deprecated, read where the info is absent.
	d := s.GetDrainageInfo().GetStatus()
	if d == enumspb.VERSION_DRAINAGE_STATUS_UNSPECIFIED {
		d = s.GetDrainageStatus()
	}
	if d != enumspb.VERSION_DRAINAGE_STATUS_UNSPECIFIED {
		v.DrainageStatus = c.enumName(d)
	}
	return v
}
