package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc/codes"

	"github.com/porthole-dev/porthole/temporal/read"
)

// classify wraps an error from the Temporal connection in the read package's
// sentinel for its kind, keeping the original text as detail for the
// operations log.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, read.ErrDenied) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %v", read.ErrUnavailable, err)
	}
	st := serviceerror.ToStatus(err)
	if st.Code() == codes.PermissionDenied && strings.HasPrefix(st.Message(), guardMessage) {
		return fmt.Errorf("%w: %s", read.ErrDenied, st.Message())
	}
	var sentinel error
	switch st.Code() {
	case codes.NotFound:
		sentinel = read.ErrNotFound
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
		sentinel = read.ErrInvalidArgument
	case codes.ResourceExhausted:
		sentinel = read.ErrThrottled
	default:
		sentinel = read.ErrUnavailable
	}
	return fmt.Errorf("%w: %v", sentinel, err)
}

func isNotFound(err error) bool { return errors.Is(err, read.ErrNotFound) }
