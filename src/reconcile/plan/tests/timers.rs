//! `activeDeadlineSeconds` and its requeue.

use super::*;

scenario_group!(cases);

fn cases() -> Vec<Case> {
    let deadline = |now: i64, suspended: bool| {
        let (j, pods) = running_job(&[(Worker, 1, Never)], |_| vec![]);
        let mut j = with_policy(j, |r| {
            r.active_deadline_seconds = Some(100);
            r.clean_pod_policy = Some(CleanPodPolicy::Running);
            r.suspend = Some(suspended);
        });
        if suspended {
            j.status = Some(status(
                &[
                    CREATED,
                    (Running, false, "TFJobSuspended"),
                    (Suspended, true, "TFJobSuspended"),
                ],
                true,
            ));
        }
        let pods = if suspended { vec![] } else { pods };
        (j, pods, at(now))
    };
    let (j, p, now) = deadline(50, false);
    let before = case(
        "deadline ahead: requeue at the exact moment",
        j,
        p,
        now,
        Expect {
            conditions: Some(vec![CREATED, RUNNING]),
            requeue_at: Some(Some(at(100))),
            ..Default::default()
        },
    );
    let (j, p, now) = deadline(100, false);
    let reached = case(
        "deadline reached: failed, then the running pods go (cleanPodPolicy Running)",
        j,
        p,
        now,
        Expect {
            conditions: Some(ended(Failed, "TFJobFailed")),
            last_message: Some(
                "Job j has failed because it was active longer than specified deadline".into(),
            ),
            events: Some(vec!["TFJobFailed"]),
            delete_pods: Some(vec![]),
            cleanup_pods: Some(names("j", &[(Worker, 0)])),
            delete_services: Some(vec![]),
            cleanup_services: Some(names("j", &[(Worker, 0)])),
            requeue_at: Some(None),
            completion_time: Some(Some(at(100))),
            ..Default::default()
        },
    );
    let (j, p, now) = deadline(500, true);
    let suspended = case(
        "deadline does not run while suspended",
        j,
        p,
        now,
        Expect {
            conditions: Some(vec![
                CREATED,
                (Running, false, "TFJobSuspended"),
                (Suspended, true, "TFJobSuspended"),
            ]),
            requeue_at: Some(None),
            events: Some(vec![]),
            ..Default::default()
        },
    );
    let (j, p, now) = deadline(80, false);
    let mut resumed_clock = j.clone();
    resumed_clock.status.as_mut().unwrap().start_time = Some(Time(at(60)));
    let restarted = case(
        "deadline counts from the (reset) startTime",
        resumed_clock,
        p,
        now,
        Expect {
            requeue_at: Some(Some(at(160))),
            ..Default::default()
        },
    );
    vec![before, reached, suspended, restarted]
}
