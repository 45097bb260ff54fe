// Package parallel runs the independent requests of a step at once: a run through a slow link pays one
// round trip for them, not one each. Only the domain's rooms use it.
package parallel

import (
	"errors"
	"sync"
)

// All runs the functions at once and joins their errors.
func All(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Background runs fn in a goroutine and returns what waits for its error; the waiter may be called more
// than once.
func Background(fn func() error) func() error {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = fn()
	}()
	return func() error {
		<-done
		return err
	}
}
