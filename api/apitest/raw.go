package apitest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strings"
)

// Post sends body to path as it is, as contentType; no reply fails the test.
func (c *Client) Post(path, contentType string, body []byte, chunked bool, headers ...string) Reply {
	c.tb.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // of unknown length: sent chunked
	}
	r, err := send(context.Background(), c.HTTP, "POST", c.URL+path, contentType, rd, headers)
	if err != nil && r.Status == 0 { // a reply cut short is returned as far as it came
		c.tb.Fatalf("POST %s: %v", path, err)
	}
	return r
}

// OpenRequest opens a connection of its own and writes the head of a POST
// of JSON to path, then body, which may be only its start.
func (c *Client) OpenRequest(path string, headers []string, body []byte) (net.Conn, *bufio.Reader) {
	c.tb.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.URL, "http://"))
	if err != nil {
		c.tb.Fatal(err)
	}
	c.tb.Cleanup(func() { conn.Close() })
	head := "POST " + path + " HTTP/1.1\r\nHost: brain\r\nContent-Type: application/json\r\n" + strings.Join(headers, "\r\n") + "\r\n\r\n"
	if _, err := conn.Write(append([]byte(head), body...)); err != nil {
		c.tb.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}
