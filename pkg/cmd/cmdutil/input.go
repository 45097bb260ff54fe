package cmdutil

import (
	"fmt"
	"io"
	"os"
)

// ReadInput reads the file named by a -f flag ("-" is stdin), refusing more than max bytes.
func ReadInput(flag, name string, stdin io.Reader, max int64) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, name, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %s: is larger than %d bytes", flag, name, max)
	}
	return data, nil
}
