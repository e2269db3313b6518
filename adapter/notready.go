package adapter

import (
	"errors"

	"github.com/autoinfer/autoinfer/driver"
	"github.com/autoinfer/autoinfer/failure"
)

// notReady turns the driver's failed ready check into the typed failure,
// or returns nil for any other error.
func notReady(err error) *failure.TargetNotReady {
	var nr *driver.NotReadyError
	if !errors.As(err, &nr) {
		return nil
	}
	return &failure.TargetNotReady{Status: nr.Status, Type: nr.Type, Message: nr.Message, TimedOut: nr.TimedOut > 0}
}
