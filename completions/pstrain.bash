# bash completion for pstrain: subcommands and their flags.
# Install: source this file, or copy it to /usr/share/bash-completion/completions/pstrain.
_pstrain() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local world="--rank --world_size --master_addr --master_port --num_servers"
  local job="--model --dataset --mode --staleness --optimizer --lr --momentum --nesterov --weight_decay --betas --eps --lr_schedule --staleness_lr --batch_size --epochs --max_steps --seed --eval_interval --log_interval"
  local local_flags="--data_dir --threads --timeout --max_frame_bytes --auth_token_file --json --quiet"
  local flags
  case "${COMP_WORDS[1]}" in
    serve) flags="$world $job $local_flags --checkpoint --resume --bind_addr --checkpoint_every --keep" ;;
    work) flags="$world $local_flags --device" ;;
    launch) flags="--world_size --master_addr --master_port --num_servers $job $local_flags --checkpoint --device" ;;
    eval) flags="--checkpoint --model --dataset $local_flags" ;;
    bench) flags="wire train load --connections --bytes --sizes --workers --op --seconds --model --modes --world_size --steps --batch_size --lr --momentum --seed --data_dir --threads --timeout --json" ;;
    *) flags="serve work launch eval bench --help --version" ;;
  esac
  if [ "$COMP_CWORD" -eq 1 ]; then flags="serve work launch eval bench --help --version"; fi
  COMPREPLY=($(compgen -W "$flags" -- "$cur"))
}
complete -F _pstrain pstrain
