package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/store"
)

const userUsage = `usage: ` + product.Name + ` user <command> --username NAME [settings] < password

commands:
  add      create a user (--admin: with the admin role; the first user has it anyway)
  passwd   set a user's password and end all of their sessions

Each reads the password (12 to 1024 characters) from the first line of stdin,
so that it shows neither in ps nor in the shell's history:

  echo "$PW" | ` + product.Name + ` user add --username ada

Both take the settings of serve to find the database ('` + product.Name + ` -h' lists them).
`

// runUser runs `brain user <command>`.
func runUser(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	var cmd string
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "add", "passwd":
	case "help", "-h", "-help", "--help":
		_, err := io.WriteString(stdout, userUsage)
		return err
	case "":
		io.WriteString(stderr, userUsage)
		return errors.New("user needs a command: add or passwd")
	default:
		io.WriteString(stderr, userUsage)
		return fmt.Errorf("unknown user command %q", cmd)
	}
	var username string
	var admin bool
	cfg, err := parseConfig(product.Name+" user "+cmd, args, getenv, stderr,
		helpText(fmt.Sprintf("usage: "+product.Name+" user %s --username NAME [settings] < password\n\n"+
			"--username is required; of the settings, "+product.EnvPrefix+"DATA_DIR and "+product.EnvPrefix+"DATABASE_URL say which database:\n\n", cmd)),
		func(fs *flag.FlagSet) {
			fs.StringVar(&username, "username", "", "the user's name (required)")
			if cmd == "add" {
				fs.BoolVar(&admin, "admin", false, "give the user the admin role")
			}
		})
	if err != nil {
		return helpIsNoError(err)
	}
	if username == "" {
		return fmt.Errorf("user %s needs --username", cmd)
	}
	password, err := readPassword(stdin)
	if err != nil {
		return err
	}
	db, _, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := auth.NewService(store.NewAuthStore(db), cfg.Auth)
	if cmd == "passwd" { // the operator need not know the old password
		name := auth.NormalizeUsername(username)
		err := svc.SetPassword(ctx, name, password)
		if errors.Is(err, auth.ErrNotFound) {
			return fmt.Errorf("no user named %q", name)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "set the password of %s and ended all of their sessions (a running server may accept one it has cached for up to %v more)\n",
			name, svc.Config().CacheTTL)
		return nil
	}
	add := svc.AddUser
	if admin {
		add = svc.AddAdmin
	}
	u, err := add(ctx, username, password)
	if errors.Is(err, auth.ErrConflict) {
		return fmt.Errorf("a user named %q exists already", auth.NormalizeUsername(username))
	}
	if err != nil {
		return err
	}
	role := ""
	if u.Admin {
		role = ", an admin"
	}
	fmt.Fprintf(stdout, "created user %s (id %s%s)\n", u.Username, u.ID, role)
	return nil
}

// readPassword reads the first line of stdin.
func readPassword(stdin io.Reader) (string, error) {
	if stdin == nil {
		return "", errors.New("the password is read from stdin")
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
