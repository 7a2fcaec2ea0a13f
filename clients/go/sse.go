package palisade

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
)

// sseEvent is one Server-Sent Event: its name and its JSON data.
type sseEvent struct {
	name string
	data json.RawMessage
}

// readEvents reads events from r until it ends or breaks (the error says which).
func readEvents(r io.Reader, each func(sseEvent) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var name string
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF // a stream does not end on its own
			}
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if name != "" && len(data) > 0 {
				if !each(sseEvent{name: name, data: json.RawMessage(strings.Join(data, "\n"))}) {
					return nil
				}
			}
			name, data = "", nil
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
}
