# ralph as a Nomad batch job (docs/deploy/README.md explains every choice).
#
# Before running: `nomad var put nomad/jobs/ralph ANTHROPIC_API_KEY=...`, and the
# project (PROMPT.md, ralph.toml) under /work/project on the host volume
# "ralph-work" (or a CSI volume: change `type` and `source`).
job "ralph" {
  type        = "batch"
  datacenters = ["dc1"]

  group "ralph" {
    count = 1

    volume "work" {
      type      = "host"
      source    = "ralph-work"
      read_only = false
    }

    # Restarts on the same node after a crash; each one resumes, losing nothing.
    # Nomad cannot tell exit codes apart: a run that exits 1, 2, 3 or 130 is
    # started again and --resume-or-start ends at once with the same code, until
    # these attempts are used up.
    restart {
      attempts = 3
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    # A lost node: the job moves to another one, which resumes the run (with a
    # volume both nodes can mount, ralph's lease keeps two from working at once).
    reschedule {
      attempts       = 5
      interval       = "24h"
      delay          = "30s"
      delay_function = "exponential"
      max_delay      = "10m"
      unlimited      = false
    }

    task "ralph" {
      driver = "docker"

      config {
        image   = "registry.example.com/ralph:latest"
        command = "ralph"
        args    = ["--resume-or-start", "--quiet", "-C", "/work/project"]
      }

      volume_mount {
        volume      = "work"
        destination = "/work"
      }

      # SIGTERM: ralph stops the agent's group in order and saves the checkpoint.
      kill_signal  = "SIGTERM"
      kill_timeout = "60s"

      env {
        XDG_STATE_HOME = "/work/state"
      }

      # Credentials from Nomad Variables, into the environment, never the job file.
      template {
        data        = <<EOT
{{ with nomadVar "nomad/jobs/ralph" }}ANTHROPIC_API_KEY={{ .ANTHROPIC_API_KEY }}{{ end }}
EOT
        destination = "secrets/ralph.env"
        env         = true
      }

      resources {
        cpu    = 1000
        memory = 2048
      }
    }
  }
}
