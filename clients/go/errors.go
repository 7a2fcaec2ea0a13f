package palisade

import (
	"errors"
	"fmt"
)

// Error is every error the client returns about the cluster: a node's answer (Code is the
// protocol's stable code, docs/protocol.md section 9) or one the client decided
// (LOCK_TIMEOUT, LOCKED, TOKEN_REGRESSION, WRONG_CLUSTER, SESSION_EXPIRED, CLOSED).
//
// Definite or not: Indefinite is true when the request may or may not have been applied
// (it was sent and no definite answer came before the deadline, or a node answered
// TIMEOUT); a retry with the same seq gets the first answer. Every other error is definite:
// the request was refused, or never reached a node of this cluster that could apply it.
//
// Compare with errors.Is against the Err* values (they match on Code), or with
// errors.As to read the fields. An error caused by the caller's context also matches
// context.DeadlineExceeded or context.Canceled.
type Error struct {
	Code       string
	Message    string
	HTTPStatus int
	// CurrentToken: on FENCED, NOT_HOLDER and CONFLICT, the lock's token now (0: free).
	CurrentToken uint64
	// CurrentRevision: on CONFLICT for ifRevision, the key's revision now (0: absent).
	CurrentRevision int64
	Indefinite      bool
	// Withdrawn: on LOCK_TIMEOUT, whether the cluster confirmed that nothing is held or
	// queued for the call; when false the client goes on withdrawing in the background.
	Withdrawn bool
	cause     error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Unwrap gives the cause: the context's error, a network error.
func (e *Error) Unwrap() error { return e.cause }

// Is matches an Err* value by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// The codes, as values for errors.Is.
var (
	ErrUnavailable      = &Error{Code: "UNAVAILABLE"}       // no node of the cluster could serve it: not applied
	ErrTimeout          = &Error{Code: "TIMEOUT"}           // the outcome is unknown
	ErrSessionExpired   = &Error{Code: "SESSION_EXPIRED"}   // the session is gone, and its locks with it
	ErrNotHolder        = &Error{Code: "NOT_HOLDER"}        // release/proclaim/resign without holding it
	ErrFenced           = &Error{Code: "FENCED"}            // a fenced write whose lock is not held with that token
	ErrConflict         = &Error{Code: "CONFLICT"}          // mode/limit/revision mismatch, not waiting
	ErrLocked           = &Error{Code: "LOCKED"}            // TryLock: someone else holds it
	ErrLockTimeout      = &Error{Code: "LOCK_TIMEOUT"}      // not granted (or elected) before the context ended
	ErrTokenRegression  = &Error{Code: "TOKEN_REGRESSION"}  // a grant below a token already seen
	ErrWrongCluster     = &Error{Code: "WRONG_CLUSTER"}     // the nodes answer for another cluster
	ErrUnauthenticated  = &Error{Code: "UNAUTHENTICATED"}   // no token, or not accepted
	ErrPermissionDenied = &Error{Code: "PERMISSION_DENIED"} // outside the token's scope
	ErrLimitExceeded    = &Error{Code: "LIMIT_EXCEEDED"}    // a configured bound
	ErrInvalidArgument  = &Error{Code: "INVALID_ARGUMENT"}  // a field is wrong (the message names it)
	ErrClosed           = &Error{Code: "CLOSED"}            // the client or session was closed
)

// IsIndefinite reports whether err leaves the outcome of its request unknown.
func IsIndefinite(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Indefinite
}

// wireCodes maps the protocol's codes onto the client's where they differ.
var wireCodes = map[string]string{
	"UNKNOWN_SESSION": "SESSION_EXPIRED",
	"NOT_LEADER":      "UNAVAILABLE",
	"STALE_SEQUENCE":  "CONFLICT",
	"BAD_FRAME":       "INVALID_ARGUMENT",
	"FRAME_TOO_LARGE": "INVALID_ARGUMENT",
}

func newError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
