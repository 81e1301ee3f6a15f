# Bash completion for Pendulum's programs: pd-enqueue, pd-worker, pd-reaper,
# pd-cron, pd-relay and pd-admin. The words are the program's own: each
# TAB asks `PROG --complete-words`, which prints the options (and for
# pd-admin and pd-cron the commands with theirs) from the very tables its
# getopt parses, so completion cannot drift from the program. Installed as
# .../bash-completion/completions/pendulum with a link per program; source
# it by hand to try it: `. completion/pendulum.bash`.

# _pendulum PROG: COMPREPLY for the word at COMP_CWORD of COMP_WORDS.
_pendulum()
{
	local prog=$1 cur=${COMP_WORDS[COMP_CWORD]} line path words w i key
	# opts[_PATH]: the words of the program (_) or of a command (_jobs, "_job show").
	local -A opts=() groups=()

	COMPREPLY=()
	while IFS= read -r line; do
		path=${line%%$'\t'*}
		opts[_$path]=${line#*$'\t'}
		[[ $path == *" "* ]] && groups[${path%% *}]=1
	done < <("$prog" --complete-words 2>/dev/null)
	[[ -n ${opts[_]+set} ]] || return 0

	# Walk the words before the cursor: the options (skipping the value of
	# those that take one) and the command they name, if any. COMP_WORDS
	# splits --opt=value into --opt, =, value.
	local at="" expect=0
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == "=" ]]; then
			expect=1
			continue
		fi
		if ((expect)); then
			expect=0
			continue
		fi
		case $w in
		-*)
			[[ " ${opts[_$at]} " == *" $w= "* ]] && expect=1
			;;
		*)
			key=${at:+$at }$w
			if [[ -n ${opts[_$key]+set} ]] || [[ -z $at && -n ${groups[$w]+set} ]]; then
				at=$key
			fi
			;;
		esac
	done

	# A value: a file name (configuration files, crontabs, URL files).
	if ((expect)) || [[ $cur == "=" ]]; then
		[[ $cur == "=" ]] && cur=""
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return 0
	fi
	if [[ $cur == -* ]]; then
		words=${opts[_$at]//=/}
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return 0
	fi
	# A command: its first word, or within a group the second.
	if [[ -z $at && ${#opts[@]} -gt 1 ]] || [[ -n $at && -n ${groups[$at]+set} ]]; then
		local -A seen=()
		for key in "${!opts[@]}"; do
			key=${key#_}
			if [[ -z $at && -n $key ]]; then
				seen[${key%% *}]=1
			elif [[ -n $at && $key == "$at "* ]]; then
				seen[${key#"$at "}]=1
			fi
		done
		mapfile -t COMPREPLY < <(compgen -W "${!seen[*]}" -- "$cur")
		return 0
	fi
	# An operand (a payload, a file, an id): file names.
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}

complete -F _pendulum pd-enqueue pd-worker pd-reaper pd-cron pd-relay pd-admin
