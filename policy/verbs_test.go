package policy

import (
	"slices"
	"testing"
)

func TestMutatingVerbsScreen(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"terminate_workflow", "signalWorkflow", "start-workflow", "query_workflow", "pause_schedule", "TRIGGER_SCHEDULE",
		"batch_reset", "terminateworkflow", "create_issue", "write_file", "set_label", "addComment", "run-script", "sendMessage",
		"kill", "push_files", "merge_pull_request", "toggle-simulated-logging", "restart_service",
		"SQLExec", "APIPost", "fork_repository", "assign_issue", "publishRelease", "lock_issue", "purge_cache", "mark_read",
	} {
		if len(MutatingVerbs(name)) == 0 {
			t.Errorf("the screen passed %s", name)
		}
	}
	for _, name := range []string{
		"list_issues", "get_issue", "search_code", "echo", "get-env", "get-sum", "describe_workflow", "get_dataset",
		"read_input", "get_output", "list_workflows", "get-structured-content", "get-resource-links", "settings_overview",
	} {
		if got := MutatingVerbs(name); len(got) > 0 {
			t.Errorf("the screen refused %s for %v", name, got)
		}
	}
	if got := nameWords("getHTTPStatus_forRun-id"); !slices.Equal(got, []string{"get", "http", "status", "for", "run", "id"}) {
		t.Errorf("nameWords = %v", got)
	}
}
