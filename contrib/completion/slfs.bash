# bash completion for slfs.
#   install -Dm644 contrib/completion/slfs.bash ~/.local/share/bash-completion/completions/slfs

_slfs() {
    local cur prev verb i
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    local verbs="mount umount demo sim status stats diag edit live build run stop reset events open close teleport
        focus save-back reset-all recompile exec commands open-uri mcp history restore resend push pull"
    local opts="prefetch= attr_timeout= delete_grace= vm= save_retries= shutdown_grace= open_cmd=
        history_max= history_days=
        allow_other allow_root default_permissions ro rw noatime auto_unmount"

    verb=
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            -*) ;;
            *) verb=${COMP_WORDS[i]}; break ;;
        esac
    done

    if [[ -z $verb ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "-v --verbose --version -h --help" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
        fi
        return
    fi

    case $prev in
        -o)
            # complete the last element of a comma-separated list
            local head=${cur%,*} last=${cur##*,}
            [[ $head == "$cur" ]] && head= || head+=,
            COMPREPLY=($(compgen -P "$head" -W "$opts" -- "$last"))
            compopt -o nospace 2>/dev/null
            return ;;
        --target) COMPREPLY=($(compgen -W "luau lsl2 mono auto" -- "$cur")); return ;;
        --viewer-version) COMPREPLY=($(compgen -W "1 2" -- "$cur")); return ;;
        --world|--mount) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --host|--port|--latency-ms|--since|--exec|--delay) return ;;
    esac

    local flags=
    case $verb in
        mount) flags="-f --foreground --host --port -o" ;;
        demo) flags="-o" ;;
        sim) flags="--port --world --latency-ms --viewer-version --handshake-timeout -v" ;;
        events) flags="-f --follow --since --json --mount" ;;
        recompile) flags="--target --json --mount" ;;
        diag|edit) flags="--wait --json --mount" ;;
        history) flags="--deleted --json --mount" ;;
        resend) flags="--force --json --mount" ;;
        push) flags="--plan --delete --stopped --force --no-rollback --verbose -v --watch --exec --delay --json --mount" ;;
        pull) flags="--delete --json --mount" ;;
        umount) flags= ;;
        mcp) flags="--mount --auto-mount" ;;
        *) flags="--json --mount" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags -h --help" -- "$cur"))
        return
    fi
    case $verb in
        mount|umount|demo|status|stats|close|teleport|focus|save-back|reset-all|recompile|push|pull)
            COMPREPLY=($(compgen -d -- "$cur")) ;;
        diag|edit|build|run|stop|reset|history|restore|resend)
            COMPREPLY=($(compgen -f -- "$cur")) ;;
        *) ;;
    esac
}
complete -o filenames -F _slfs slfs
